import ConduitCore
public import ConduitDriver

/// The in-process "network" that loopback listeners bind names on. Each registry built with
/// `LoopbackTransport(hub:)` shares the hub it is given; there is no process-wide hub, so tests
/// and embedded runtimes are isolated from each other unless they share one on purpose.
public final class LoopbackHub: Sendable {
    private let table = TSanVisibleMutex(Table())
    private let partitions = TSanVisibleMutex<[String: PartitionSwitch]>([:])
    /// The clock impaired links delay datagrams on: the "network's" time.
    let clock: any ConduitClock

    /// Makes an empty hub: no names bound. Transports that share a hub reach each other's
    /// listeners. Impaired links delay datagrams on `clock` (the system's by default; a test gives
    /// the `VirtualClock` its runtime runs on, so an impaired path runs on virtual time too).
    public init(clock: any ConduitClock = SystemMonotonicClock()) {
        self.clock = clock
    }

    /// The names bound, and who waits for one to be unbound; one lock, so no unbinding falls
    /// between a waiter's look and its wait.
    private struct Table {
        var listeners: [String: LoopbackListener] = [:]
        var unbindWaiters: [String: [CheckedContinuation<Void, Never>]] = [:]
    }

    func bind(_ name: String, _ listener: LoopbackListener) throws(ConduitError) {
        let taken = table.withLock { table -> Bool in
            guard table.listeners[name] == nil else { return true }
            table.listeners[name] = listener
            return false
        }
        if taken { throw ConduitError(.addressInUse, "loopback://\(name) is already listening") }
    }

    func unbind(_ name: String, _ listener: LoopbackListener) {
        let waiters = table.withLock { table -> [CheckedContinuation<Void, Never>] in
            guard table.listeners[name] === listener else { return [] }
            table.listeners[name] = nil
            return table.unbindWaiters.removeValue(forKey: name) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    func listener(named name: String) -> LoopbackListener? {
        table.withLock { $0.listeners[name] }
    }

    /// Returns once nothing listens on `name` (at once if nothing does): for tests that wait for
    /// a listener to go (a dropped one closes on a task of its own) without polling.
    package func waitUntilUnbound(_ name: String) async {
        await withCheckedContinuation { continuation in
            let bound = table.withLock { table -> Bool in
                guard table.listeners[name] != nil else { return false }
                table.unbindWaiters[name, default: []].append(continuation)
                return true
            }
            if !bound { continuation.resume() }
        }
    }

    /// Cuts (or restores) every impaired link to `name`, both directions: while partitioned,
    /// every datagram is dropped (a total blackout). Links without impairment options ignore it.
    public func setPartitioned(_ name: String, _ partitioned: Bool) {
        partitionSwitch(for: name).isOn = partitioned
    }

    func partitionSwitch(for name: String) -> PartitionSwitch {
        partitions.withLock { table in
            if let existing = table[name] { return existing }
            let created = PartitionSwitch()
            table[name] = created
            return created
        }
    }

    /// Names currently listening, for diagnostics.
    public var boundNames: [String] { table.withLock { $0.listeners.keys.sorted() } }
}
