import Conduit

/// The demo's script. Each step prints what happened and checks it against the contract.
struct DemoScenario {
    let runtime: ConduitRuntime
    let transcript = Transcript()

    // From demo.streams, through the stream catalog plugin.
    static let chat = Demo.chat.streamID
    static let cursor = Demo.cursor.streamID
    static let filePiece = Demo.filePiece.streamID
    static let gameState = Demo.gameState.streamID
    static let legacy = Demo.legacy.streamID
    static let whiteboard = Demo.whiteboard.streamID

    func run() async throws -> [String] {
        var failures: [String] = []
        func check(_ condition: Bool, _ what: String) { if !condition { failures.append(what) } }

        let listener = try await runtime.listen(as: "bob")
        async let accepted = listener.accept()
        let alice = try await runtime.connect(as: "alice")
        guard let bob = try await accepted else { return ["Bob's listener closed before the call arrived"] }
        await transcript.say("alice", "connected to \(alice.remotePeer) over \(listener.url) (peer supports data sessions: \(alice.isPeerDataSessionSupported))")
        await transcript.say("bob", "answered \(bob.remotePeer)")

        let (strokesArrived, strokesSink) = AsyncStream.makeStream(of: Void.self)
        let receiver = Task { await BobSide(call: bob, transcript: transcript, strokesArrived: strokesSink).run() }

        // Creation failures, through the public API.
        do {
            _ = try await alice.makeOutboundDataSession(streamID: 1000, type: .reliableMessage)
            check(false, "stream 1000 was accepted")
        } catch { await report(error, expect: .invalidId, "make outbound stream 1000", &failures) }
        do {
            _ = try await bob.makeInboundDataSession(streamID: 999)
            check(false, "inbound 999 without an incoming event was accepted")
        } catch { await report(error, expect: .notIncoming, "make inbound stream 999 before any incoming event", &failures) }

        let chat = try await alice.makeOutboundDataSession(streamID: Demo.chat.streamID, type: Demo.chat.type)
        let cursor = try await alice.makeOutboundDataSession(streamID: Demo.cursor.streamID, type: Demo.cursor.type)
        let file = try await alice.makeOutboundDataSession(streamID: Demo.filePiece.streamID, type: Demo.filePiece.type)
        let game = try await alice.makeOutboundDataSession(streamID: Demo.gameState.streamID, type: Demo.gameState.type)
        let legacy = try await alice.makeOutboundDataSession(streamID: Demo.legacy.streamID, type: Demo.legacy.type)
        await transcript.say("alice", "made outbound sessions \(Demo.all.dropLast().map(\.description).joined(separator: ", "))")
        do {
            _ = try await alice.makeOutboundDataSession(streamID: Self.chat, type: .reliableMessage)
            check(false, "a second session on stream 100 was accepted")
        } catch { await report(error, expect: .alreadyExist, "make outbound stream 100 again", &failures) }

        for (index, line) in ["hello Bob", "can you see the board?", "sending the file now"].enumerated() {
            try await chat.send(Array(line.utf8), timestamp: 1_000 + UInt64(index))
        }
        for index in 0..<3 {
            try await cursor.send(Array("x=\(10 * index),y=\(20 * index)".utf8), timestamp: 2_000 + UInt64(index))
        }
        try await file.send(DemoPayload.file, timestamp: 3_000)
        try await game.send(DemoPayload.snapshot, timestamp: 4_000)
        await transcript.say("alice", "sent 3 chat lines, 3 cursor positions, a \(DemoPayload.file.count)-byte file and a \(DemoPayload.snapshot.count)-byte snapshot")

        // Oversize: refused at send, and the session keeps working.
        do {
            try await chat.send([UInt8](repeating: 0, count: Limits.maxMessageSize + 1), timestamp: 0)
            check(false, "an oversize message was accepted")
        } catch {
            await transcript.say("alice", "send of \(Limits.maxMessageSize + 1) bytes on stream 100 refused: \(error.message)")
            check(error.code == .messageTooLarge, "oversize send failed with \(error.code), not messageTooLarge")
        }
        try await chat.send(Array("still here after the oversize send".utf8), timestamp: 1_003)

        // Bob declines stream 104: Alice's session closes with `unsupported`.
        let legacyClosed = await firstClose(of: legacy)
        await transcript.say("alice", "stream 104 closed: \(legacyClosed.map(String.init(describing:)) ?? "never")")
        check(legacyClosed == .unsupported, "stream 104 closed with \(String(describing: legacyClosed)), not unsupported")
        do {
            try await legacy.send(Array("anyone?".utf8), timestamp: 0)
            check(false, "a send on the unsupported stream was accepted")
        } catch {
            await transcript.say("alice", "send on stream 104 refused: \(error.message)")
            check(error.closeReason == .unsupported, "send on stream 104 failed with \(error), not closed(unsupported)")
        }

        // The rate cap: a burst on the whiteboard stream queues behind 2 Mbit/s.
        let board = try await alice.makeOutboundDataSession(streamID: Demo.whiteboard.streamID, type: Demo.whiteboard.type)
        let boardEvents = Task { () -> [Bool] in
            var seen: [Bool] = []
            for await event in board.events {
                guard case .tooLongQueuedData(let enabled) = event else { break }
                await transcript.say("alice", "tooLongQueuedData(enabled: \(enabled)) on stream 105")
                seen.append(enabled)
                if !enabled { break }
            }
            return seen
        }
        let stroke = [UInt8](repeating: 0x5A, count: 40 * 1024)
        for index in 0..<DemoPayload.strokes { try await board.send(stroke, timestamp: 5_000 + UInt64(index)) }
        await transcript.say("alice", "queued \(DemoPayload.strokes) whiteboard strokes of 40 KiB (\(DemoPayload.strokes * 40) KiB) at \(runtime.configuration.rateLimit)")
        let toggles = await boardEvents.value
        check(toggles == [true, false], "tooLongQueuedData went \(toggles), expected [true, false]")

        for await _ in strokesArrived {}
        await alice.hangUp()
        await transcript.say("alice", "hung up")
        let closes = await [chat, cursor, file, game, board].asyncMap { await firstClose(of: $0) }
        await transcript.say("alice", "outbound sessions closed with: \(closes.map { $0.map(String.init(describing:)) ?? "-" }.joined(separator: ", "))")
        check(closes.allSatisfy { $0 == .sessionEnd }, "outbound sessions closed with \(closes)")

        let bobReport = await receiver.value
        failures += bobReport
        await listener.close()
        return failures
    }

    private func report(_ error: ConduitError, expect reason: DataSessionFailReason, _ what: String, _ failures: inout [String]) async {
        await transcript.say(what.contains("inbound") ? "bob" : "alice", "\(what): failed with \(error.failReason.map(String.init(describing:)) ?? "\(error.code)") (\(error.message))")
        if error.failReason != reason { failures.append("\(what) failed with \(error), expected \(reason)") }
    }

    private func firstClose(of session: OutboundDataSession) async -> DataSessionCloseReason? {
        for await event in session.events {
            if case .closed(let reason) = event { return reason }
        }
        return await session.closeReason
    }
}

enum DemoPayload {
    static let strokes = 24
    /// A 64 KiB "file" with a recognisable pattern, so Bob can check it byte for byte.
    static let file: [UInt8] = (0..<(64 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    static let snapshot: [UInt8] = (0..<(6 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
}

extension Array where Element: Sendable {
    func asyncMap<T: Sendable>(_ transform: (Element) async -> T) async -> [T] {
        var results: [T] = []
        for element in self { results.append(await transform(element)) }
        return results
    }
}
