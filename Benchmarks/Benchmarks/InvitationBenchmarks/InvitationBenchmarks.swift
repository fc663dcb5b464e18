// Invitation benchmarks for ConduitCore's InvitationBook (issue 8): the relay's table with
// thousands of invitations open at once.
//
// The book lives across passes with 9,000 background invitations that stay open (no timeout,
// never answered), so every measured invitation goes through a table of about 10,000. One
// measured pass takes `scaledIterations` (1,000) invitations through their whole life, all open
// at the same time in the middle of the pass:
//
//   1. invite all of them (newInvitation deliveries taken);
//   2. settle them as the benchmark says (accept, reject, cancel, or leave them to time out);
//   3. handleTimeouts at their deadline, then after the tombstone lifetime, so the pass ends with
//      the book as it began (9,000 open, no tombstones). That keeps the allocation count the same
//      on every pass, which is what the thresholds gate.
//
// Rows marked `*` are per invitation (scaling factor 1,000). Only mallocCountTotal is gated;
// times are reported, never gated. Names use `_`, not spaces (see FragmentationBenchmarks).
//
// - "Invitation_1to1_accept":  invite one callee, it accepts.
// - "Invitation_1to1_reject":  invite one callee, it rejects with "busy".
// - "Invitation_1to1_cancel":  invite one callee, the caller cancels.
// - "Invitation_1to1_timeout": invite one callee, nobody answers, it times out.
// - "Invitation_group8_mixed": invite 8 members of a group; 4 accept, 2 reject, 2 time out.
// - "InvitationMessage_encode_parse": one newInvitation event (4 invitees, 16 bytes of data)
//   encoded and parsed back.

import Benchmark
import ConduitCore

import ConduitRooms
import ConduitRelayCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let quick = getenv("CONDUIT_BENCHMARK_QUICK").map { String(cString: $0) == "1" } ?? false

let backgroundInvitations = 9_000
let timeoutSeconds: UInt32 = 30

enum Settle: Sendable {
    case accept, reject, cancel, timeout, groupMixed
}

/// The book and virtual time, kept across passes like a relay's.
final class BookState: @unchecked Sendable {
    var book: InvitationBook
    var now = ConduitInstant(nanoseconds: 1_000_000_000)
    let callers: [PeerID]
    let callees: [PeerID]
    let busy = Array("busy".utf8)
    let room = Array("room-000000000001".utf8)

    init(invitationsPerPass: Int) {
        book = InvitationBook(idKey: 0xBE7C_4A11_0000_0008)
        // 64 open invitations per inviter at most (the default): enough inviters for a pass.
        callers = (0..<(invitationsPerPass / 50 + 1)).map { PeerID(unchecked: "caller-\($0)") }
        callees = (0..<(invitationsPerPass * 8)).map { PeerID(unchecked: "callee-\($0)") }
        for n in 0..<backgroundInvitations {
            do {
                try book.invite(
                    from: PeerID(unchecked: "host-\(n / 50)"), InvitationRequest(invitees: [PeerID(unchecked: "guest-\(n)")]), now: now)
            } catch {
                fatalError("background invite refused: \(error)")
            }
        }
        _ = book.takeDeliveries()
    }

    /// One pass: `count` invitations, all open at once, settled as `settle` says; returns the deliveries made.
    func pass(count: Int, settle: Settle) -> Int {
        let group = settle == .groupMixed ? 8 : 1
        var ids: [InvitationID] = []
        ids.reserveCapacity(count)
        var delivered = 0
        do {
            for i in 0..<count {
                let invitees = Array(callees[(i * group)..<(i * group + group)])
                let request = InvitationRequest(
                    invitees: invitees, groupID: group > 1 ? "class" : nil, data: room, timeoutSeconds: timeoutSeconds)
                ids.append(try book.invite(from: callers[i % callers.count], request, now: now).id)
            }
            delivered += book.takeDeliveries().count
            for (i, id) in ids.enumerated() {
                switch settle {
                case .accept: try book.accept(id, by: callees[i], data: [], now: now)
                case .reject: try book.reject(id, by: callees[i], data: busy, now: now)
                case .cancel: try book.cancel(id, by: callers[i % callers.count], data: [], now: now)
                case .timeout: break
                case .groupMixed:
                    for k in 0..<4 { try book.accept(id, by: callees[i * 8 + k], data: [], now: now) }
                    for k in 4..<6 { try book.reject(id, by: callees[i * 8 + k], data: busy, now: now) }
                }
                delivered += book.takeDeliveries().count
            }
        } catch {
            fatalError("benchmark request refused: \(error)")
        }
        now = now + .seconds(timeoutSeconds)
        book.handleTimeouts(now: now)
        delivered += book.takeDeliveries().count
        now = now + book.configuration.tombstoneLifetime
        book.handleTimeouts(now: now)
        precondition(book.openCount == backgroundInvitations && book.tombstoneCount == 0, "the pass left invitations behind")
        return delivered
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .automatic,
        warmupIterations: quick ? 1 : 3,
        scalingFactor: .kilo,
        maxDuration: quick ? .milliseconds(100) : .milliseconds(1_500),
        maxIterations: quick ? 3 : 1_000,
        thresholds: [
            .mallocCountTotal: .strict,
            .wallClock: .none,
            .throughput: .none,
        ]
    )

    let cases: [(String, Settle)] = [
        ("Invitation_1to1_accept", .accept),
        ("Invitation_1to1_reject", .reject),
        ("Invitation_1to1_cancel", .cancel),
        ("Invitation_1to1_timeout", .timeout),
        ("Invitation_group8_mixed", .groupMixed),
    ]
    for (name, settle) in cases {
        Benchmark(name) { benchmark, state in
            let count = benchmark.scaledIterations.count
            benchmark.startMeasurement()
            blackHole(state.pass(count: count, settle: settle))
            benchmark.stopMeasurement()
        } setup: {
            BookState(invitationsPerPass: 1_000)
        }
    }

    Benchmark("InvitationMessage_encode_parse") { benchmark in
        let id = InvitationID(rawValue: 0x0123_4567_89AB_CDEF)!
        let message = InvitationMessage.event(
            .newInvitation(
                NewInvitation(
                    id: id, inviter: "alice", groupID: "class", invitees: ["bob", "carol", "dave", "erin"],
                    data: Array("room-000000000001".utf8).prefix(16).map { $0 }, timeoutSeconds: 30)))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            do {
                let bytes = try message.encoded()
                blackHole(try InvitationMessage.parse(bytes))
            } catch {
                fatalError("round trip failed: \(error)")
            }
        }
    }
}
