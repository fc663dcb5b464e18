import Conduit

/// Bob's half of the demo: answer incoming streams, read them, check what arrived.
struct BobSide {
    let call: Call
    let transcript: Transcript
    /// Told when every whiteboard stroke has arrived, so Alice hangs up only after that.
    let strokesArrived: AsyncStream<Void>.Continuation

    func run() async -> [String] {
        var failures: [String] = []
        var readers: [Task<[String], Never>] = []
        for await event in call.events {
            switch event {
            case .connected:
                continue
            case .eventsDropped(let count):
                failures.append("\(count) call events were lost (Bob read them too slowly)")
            case .dataSessionIncoming(let streamID, _, let type):
                if streamID == DemoScenario.legacy {
                    await transcript.say("bob", "dataSessionIncoming(stream \(streamID), \(type)): not supported here, declining")
                    await call.unsupportInboundDataSession(streamID: streamID)
                    continue
                }
                await transcript.say("bob", "dataSessionIncoming(stream \(streamID), \(type)): accepting")
                do {
                    let session = try await call.makeInboundDataSession(streamID: streamID, expecting: type)
                    if streamID == DemoScenario.chat {
                        do {
                            _ = try await call.makeInboundDataSession(streamID: streamID)
                            failures.append("a second inbound session on stream 100 was accepted")
                        } catch {
                            await transcript.say("bob", "make inbound stream 100 again: failed with \(error.failReason.map(String.init(describing:)) ?? "?")")
                            if error.failReason != .alreadyExist { failures.append("second inbound 100 failed with \(error)") }
                        }
                    }
                    readers.append(Task { await read(session) })
                } catch {
                    failures.append("make inbound \(streamID) failed: \(error)")
                }
            case .disconnected(let reason):
                await transcript.say("bob", "disconnected: \(reason)")
                if reason != .remoteHangUp { failures.append("Bob disconnected with \(reason), expected remoteHangUp") }
            }
        }
        for reader in readers { failures += await reader.value }
        return failures
    }

    private func read(_ session: InboundDataSession) async -> [String] {
        var failures: [String] = []
        var aggregator = FragmentAggregator(streamID: session.streamID, sessionType: session.type)
        var messages = 0
        var fragments = 0
        var closeReason: DataSessionCloseReason?
        for await event in session.events {
            switch event {
            case .message(let message):
                messages += 1
                if session.streamID == DemoScenario.whiteboard, messages == DemoPayload.strokes { strokesArrived.finish() }
                if session.streamID != DemoScenario.whiteboard {
                    await transcript.say("bob", "stream \(session.streamID) message @\(message.timestamp): \"\(String(decoding: message.bytes, as: UTF8.self))\"")
                }
            case .fragment(let fragment):
                fragments += 1
                if let whole = aggregator.add(fragment) {
                    let expected = session.streamID == DemoScenario.filePiece ? DemoPayload.file : DemoPayload.snapshot
                    await transcript.say("bob", "stream \(session.streamID) reassembled \(whole.bytes.count) bytes @\(whole.timestamp) from \(fragments) fragments (offsets 0, \(fragment.fragmentSize), \(2 * fragment.fragmentSize), ...): \(whole.bytes == expected ? "byte-identical" : "MISMATCH")")
                    if whole.bytes != expected { failures.append("stream \(session.streamID) content differs") }
                }
            case .closed(let reason):
                closeReason = reason
            }
        }
        if session.streamID == DemoScenario.whiteboard {
            await transcript.say("bob", "stream 105 received \(messages) whiteboard strokes")
            if messages != DemoPayload.strokes { failures.append("whiteboard got \(messages) of \(DemoPayload.strokes) strokes") }
        }
        if session.streamID == DemoScenario.chat, messages != 4 { failures.append("chat got \(messages) of 4 messages") }
        await transcript.say("bob", "stream \(session.streamID) closed: \(closeReason.map(String.init(describing:)) ?? "without a reason")")
        if closeReason != .sessionEnd { failures.append("inbound \(session.streamID) closed with \(String(describing: closeReason))") }
        return failures
    }
}
