public import Foundation

extension Process {
    /// Waits for the launched process to end, on a thread of its own (never blocking a thread of
    /// the cooperative pool), and returns its termination status. Not a `terminationHandler`:
    /// swift-corelibs-foundation's `Process` on Linux keeps itself, its run-loop source and all it
    /// holds in a reference cycle once one is set, a leak AddressSanitizer reports at exit.
    public func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                self.waitUntilExit()
                continuation.resume(returning: self.terminationStatus)
            }
        }
    }
}
