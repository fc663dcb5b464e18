import Conduit
import ConduitRelay
import Synchronization
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

/// Collects a conference's events as they come, so tests can wait for one without losing others.
final class EventLog: Sendable {
    private let events = Mutex<[Conference.Event]>([])
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ conference: Conference) {
        let stream = conference.events
        let handle = Task { [weak self] in
            for await event in stream { self?.append(event) }
        }
        task.withLock { $0 = handle }
    }

    var all: [Conference.Event] { events.withLock { $0 } }

    private func append(_ event: Conference.Event) { events.withLock { $0.append(event) } }

    private func first(where predicate: (Conference.Event) -> Bool) -> Conference.Event? {
        events.withLock { $0.first(where: predicate) }
    }

    /// Waits until an event satisfies `predicate`; returns it.
    @discardableResult
    func wait(for what: String, limit: Duration = .seconds(15), _ predicate: @escaping @Sendable (Conference.Event) -> Bool) async throws -> Conference.Event {
        try await within(what, limit: limit) { [self] in
            while true {
                if let hit = self.first(where: predicate) { return hit }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    func cancel() { task.withLock { $0?.cancel() } }
}

/// A relay on an in-process loopback address plus a runtime whose registry shares its hub.
struct LoopbackRoom {
    static let secret = try! RelaySecret(bytes: Array("loopback-room-secret-0123456789".utf8))
    let runtime: ConduitRuntime
    let server: RelayServer
    let url: String

    static func start(name: String = "relay", relay: RelayConfiguration = .init(), configure: (inout ConduitConfiguration) -> Void = { _ in }) async throws -> LoopbackRoom {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configure(&configuration)
        let runtime = ConduitRuntime(configuration: configuration)
        let server = RelayServer(authority: RelayTokenAuthority(secret: secret), configuration: relay, registry: runtime.registry)
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
