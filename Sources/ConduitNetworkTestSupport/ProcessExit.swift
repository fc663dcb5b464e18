public import Foundation

extension Process {
    /// Waits for the launched process to end, never blocking a thread, and returns its
    /// termination status.
    ///
    /// It polls `isRunning` (1 ms, doubling to 20 ms), which Foundation's own process monitor
    /// clears once it has reaped the child and set the status, then calls `waitUntilExit()`,
    /// which then returns at once. Not a `terminationHandler`:
    /// swift-corelibs-foundation's `Process` on Linux keeps itself, its run-loop source and all it
    /// holds in a reference cycle once one is set, a leak AddressSanitizer reports at exit. Not
    /// `waitUntilExit()` on a thread of our own either: that runs a run loop on the thread, and
    /// ThreadSanitizer's runtime crashed there (a SEGV inside its own bookkeeping of the run
    /// loop's mutex, in a fresh CI run), which fails the whole sanitizer step.
    public func exitStatus() async -> Int32 {
        var pause = 1
        while isRunning {
            // Not `Task.sleep`: a cancelled caller would spin here; the wait is for the child.
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(pause)) { continuation.resume() }
            }
            pause = min(pause * 2, 20)
        }
        // With the child gone this runs no run loop: it only drops the run-loop source that
        // `run()` left holding the process (without it, LeakSanitizer reports the process).
        waitUntilExit()
        return terminationStatus
    }
}
