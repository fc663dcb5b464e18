#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CPUs this process may run on (Linux's `sched_getaffinity`/`sched_setaffinity`, looked up
/// at run time: the functions are GNU extensions Swift's Glibc module leaves out).
package enum CPUAffinity {
    private typealias AffinityCall = @convention(c) (Int32, Int, UnsafeMutableRawPointer) -> Int32
    /// `cpu_set_t`'s size in glibc: 1,024 CPUs.
    private static let setBytes = 128

    private static func function(_ name: String) -> AffinityCall? {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }  // RTLD_DEFAULT
        return unsafeBitCast(symbol, to: AffinityCall.self)
        #else
        return nil
        #endif
    }

    /// The CPU numbers this process may run on now; nil where that cannot be asked.
    package static func allowed() -> [Int]? {
        guard let get = function("sched_getaffinity") else { return nil }
        var set = [UInt8](repeating: 0, count: setBytes)
        guard set.withUnsafeMutableBytes({ get(0, setBytes, $0.baseAddress!) }) == 0 else { return nil }
        return (0..<setBytes * 8).filter { set[$0 / 8] & (1 << ($0 % 8)) != 0 }
    }

    /// Confines this process (every thread it has and will start) to the first `count` CPUs it
    /// may run on; returns those CPUs, or nil if it could not (not Linux, or refused).
    package static func confine(to count: Int) -> [Int]? {
        guard let allowed = allowed(), count > 0 else { return nil }
        let chosen = Array(allowed.prefix(count))
        return confine(toCPUs: chosen) ? chosen : nil
    }

    /// Confines this process (every thread it has and will start) to `cpus`; false if it could not.
    package static func confine(toCPUs cpus: [Int]) -> Bool {
        guard let set = function("sched_setaffinity"), !cpus.isEmpty else { return false }
        var mask = [UInt8](repeating: 0, count: setBytes)
        for cpu in cpus where cpu < setBytes * 8 { mask[cpu / 8] |= 1 << (cpu % 8) }
        // Each thread has its own mask: the threads started so far (the runtime's pools) are set
        // one by one through /proc, then the process (its future threads inherit it).
        for thread in threadIDs() { _ = mask.withUnsafeMutableBytes { set(thread, setBytes, $0.baseAddress!) } }
        return mask.withUnsafeMutableBytes({ set(0, setBytes, $0.baseAddress!) }) == 0
    }

    /// The IDs of this process's threads (/proc/self/task).
    private static func threadIDs() -> [Int32] {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        var ids: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let id = Int32(name) { ids.append(id) }
        }
        return ids
    }
}
