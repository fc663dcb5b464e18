import Conduit
import ConduitRelay
import ConduitDriver
import Synchronization
import ConduitTesting
import Testing
import ConduitRelayCore

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body` with a deadline (the body must honour cancellation, as AsyncStream iteration does).
func within<T: Sendable>(_ what: String, limit: Duration = .seconds(15), _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TimedOut(what: what) }
        return value
    }
}

/// Collects a conference's events as they come, so tests can wait for one without losing others
/// (and without polling: a waiter is resumed by the event it waits for).
final class EventLog: Sendable {
    private let recorder: EventRecorder<Conference.Event>

    init(_ conference: Conference) { recorder = EventRecorder(conference.events) }

    var all: [Conference.Event] { recorder.all }

    /// Waits until an event satisfies `predicate`; returns it.
    @discardableResult
    func wait(for what: String, limit: Duration = .seconds(15), _ predicate: @escaping @Sendable (Conference.Event) -> Bool) async throws -> Conference.Event {
        let recorder = recorder
        return try await within(what, limit: limit) { try await recorder.first(where: predicate) }
    }

    /// Waits until this member's events say it knows exactly `peers` (its connect, then each
    /// peer-list change), and checks its own list agrees.
    func waitForPeers(_ peers: [PeerID], of conference: Conference, limit: Duration = .seconds(15)) async throws {
        try await waitUntilKnown(Set(peers), by: conference.localPeer, limit: limit)
        #expect(await conference.peers == peers)
    }

    /// The last peer-list version this member's events carried (nil: none carried one yet).
    var lastVersion: UInt32? {
        all.compactMap { if case .peersChanged(_, _, let version) = $0 { version } else { nil } }.last
    }

    /// Waits until this member hears of a peer-list change as `version`.
    func waitForVersion(_ version: UInt32, of peer: PeerID) async throws {
        try await wait(for: "\(peer) at peer-list version \(version)", limit: .seconds(20)) {
            if case .peersChanged(_, _, let seen) = $0 { seen == version } else { false }
        }
    }

    /// Waits until this member's events say it knows exactly `peers`, in whatever order they came.
    func waitUntilKnown(_ peers: Set<PeerID>, by member: PeerID, limit: Duration = .seconds(15)) async throws {
        let recorder = recorder
        _ = try await within("\(member) knows \(peers.sorted())", limit: limit) {
            try await recorder.wait { Self.peers(after: $0) == peers }
        }
    }

    /// The peers a member knows after `events`.
    static func peers(after events: [Conference.Event]) -> Set<PeerID> {
        var known: Set<PeerID> = []
        for event in events {
            switch event {
            case .connected(let peers): known = Set(peers)
            case .peersChanged(let joined, let left, _): known.formUnion(joined); known.subtract(left)
            default: break
            }
        }
        return known
    }

    /// Waits until this member's labeled channels are ready with `label` among them.
    func waitForChannel(_ label: ChannelLabel, limit: Duration = .seconds(15)) async throws {
        try await wait(for: "channel \(label) ready", limit: limit) { event in
            if case .channelsReady(let infos) = event { infos.contains { $0.declaration.label == label } } else { false }
        }
    }

    func cancel() { recorder.cancel() }
}

/// A relay on an in-process loopback address plus a runtime whose registry shares its hub.
struct LoopbackRoom {
    static let secret = try! RelaySecret(bytes: Array("loopback-room-secret-0123456789".utf8))
    let runtime: ConduitRuntime
    let server: RelayServer
    let url: String

    /// A relay and a runtime on `clock` (a `VirtualClock` puts both on virtual time), or on the
    /// system's clock when it is nil.
    static func start(name: String = "relay", relay: RelayConfiguration = .init(), clock: (any ConduitClock)? = nil,
                      configure: (inout ConduitConfiguration) -> Void = { _ in }) async throws -> LoopbackRoom {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configure(&configuration)
        var runtime = ConduitRuntime(configuration: configuration)
        runtime.clock = clock
        let server = RelayServer(authority: RelayTokenAuthority(secret: secret), configuration: relay, registry: runtime.registry, clock: clock ?? SystemMonotonicClock())
        let bound = try await server.listen(on: "loopback://\(name)")
        return LoopbackRoom(runtime: runtime, server: server, url: bound.description)
    }

    func token(_ peer: PeerID, room: RoomID = "room", publish: Bool = true, subscribe: Bool = true,
               subgroups: Set<SubgroupName>? = nil, ttl: Int64 = 600) -> String {
        let expiry = UInt64(Int64(RelayServer.unixTime()) + ttl)
        return RelayToken(room: room, peer: peer, canPublish: publish, canSubscribe: subscribe, allowedSubgroups: subgroups, expiresAt: expiry).signed(with: Self.secret)
    }

    func join(_ peer: PeerID, room: RoomID = "room", runtime other: ConduitRuntime? = nil) async throws -> (Conference, EventLog) {
        let conference = try await (other ?? runtime).join(relay: url, room: room, as: peer, token: token(peer, room: room))
        return (conference, EventLog(conference))
    }
}

extension LoopbackRoom {
    /// Waits until exactly `peers` are members of `room`, without polling the relay: a watcher
    /// joins, waits until the relay has announced them all to it (in any order), then leaves.
    func waitForMembers(_ peers: Set<PeerID>, in room: RoomID = "room") async throws {
        let (watcher, log) = try await join("watcher", room: room)
        try await log.waitUntilKnown(peers, by: "watcher")
        log.cancel()
        await watcher.leave()
    }
}

/// Reads `count` messages from an inbound session as (sender, text).
func read(_ session: InboundDataSession, count: Int, limit: Duration = .seconds(15)) async throws -> [(PeerID, String)] {
    try await within("\(count) messages on \(session.streamID)", limit: limit) {
        var got: [(PeerID, String)] = []
        for await event in session.events {
            if case .message(let message) = event {
                got.append((message.sender ?? "?", String(decoding: message.bytes, as: UTF8.self)))
                if got.count == count { break }
            }
        }
        return got
    }
}
