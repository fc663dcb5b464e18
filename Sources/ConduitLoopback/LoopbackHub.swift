import ConduitCore
public import ConduitDriver

/// The in-process "network" that loopback listeners bind names on. Each registry built with
/// `LoopbackTransport(hub:)` shares the hub it is given; there is no process-wide hub, so tests
/// and embedded runtimes are isolated from each other unless they share one on purpose.
public final class LoopbackHub: Sendable {
    private let listeners = TSanVisibleMutex<[String: LoopbackListener]>([:])
    private let partitions = TSanVisibleMutex<[String: PartitionSwitch]>([:])
    /// The clock impaired links delay datagrams on: the "network's" time.
    let clock: any ConduitClock

    /// Makes an empty hub: no names bound. Transports that share a hub reach each other's
    /// listeners. Impaired links delay datagrams on `clock` (the system's by default; a test gives
    /// the `VirtualClock` its runtime runs on, so an impaired path runs on virtual time too).
    public init(clock: any ConduitClock = SystemMonotonicClock()) {
        self.clock = clock
    }

    func bind(_ name: String, _ listener: LoopbackListener) throws(ConduitError) {
        let taken = listeners.withLock { table -> Bool in
            guard table[name] == nil else { return true }
            table[name] = listener
            return false
        }
        if taken { throw ConduitError(.addressInUse, "loopback://\(name) is already listening") }
    }

    func unbind(_ name: String, _ listener: LoopbackListener) {
        listeners.withLock { table in
            if table[name] === listener { table[name] = nil }
        }
    }

    func listener(named name: String) -> LoopbackListener? {
        listeners.withLock { $0[name] }
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
    public var boundNames: [String] { listeners.withLock { $0.keys.sorted() } }
}
