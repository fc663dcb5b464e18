import Conduit
import ConduitTesting
import Testing

/// What arrives, in which order and with which metadata, for each of the four session types.
@Suite("Delivery")
struct DeliveryTests {
    // MARK: Message types

    @Test("message types: 300 log-uniform messages arrive once each, in order, byte-identical", arguments: [SessionType.reliableMessage, .unreliableMessage])
    func messagesArriveOnceInOrder(type: SessionType) async throws {
        let pair = try await CallPair.connect("delivery-messages-\(type.name)")
        let (outbound, inbound) = try await pair.open(100, type)

        var generator = SplitMix64(seed: 0xC0FF_EE00 + UInt64(type.rawValue))
        var sent: [(bytes: [UInt8], timestamp: UInt64)] = []
        for index in 0..<300 {
            // Cover both ends of the range explicitly; the rest are log-uniform.
            let size = index == 0 ? 0 : index == 1 ? Limits.maxMessageSize : generator.logUniformSize(max: Limits.maxMessageSize)
            // Distinct, non-monotonic timestamps, so a mix-up cannot go unnoticed.
            let timestamp = UInt64(index) &* 0x9E37_79B9 &+ 0x1234_5678_9ABC
            sent.append((generator.bytes(size), timestamp))
        }
        #expect(Set(sent.map(\.timestamp)).count == 300)

        let reader = Task { try await readMessages(300, from: inbound) }
        for message in sent {
            try await outbound.send(message.bytes, timestamp: message.timestamp)
        }
        let received = try await reader.value
        #expect(received.count == 300)
        for (index, (got, expected)) in zip(received, sent).enumerated() {
            #expect(got.timestamp == expected.timestamp, "message \(index): timestamp")
            #expect(got.bytes.count == expected.bytes.count, "message \(index): length")
            #expect(got.bytes == expected.bytes, "message \(index): content")
        }

        let reassembly = await pair.callee.statistics.reassembly
        #expect(reassembly.messagesDroppedTimedOut == 0 && reassembly.messagesEvicted == 0 && reassembly.messagesDroppedOverCapacity == 0)

        // Nothing more than what was sent: the next event is the close.
        await outbound.close()
        let rest = try await drain(inbound, "the inbound session to close")
        #expect(rest == [.closed(.sessionEnd)])
        try await pair.finish()
    }

    // MARK: Bytes types

    @Test("bytes types: fragments carry messageID, offsets, totalLength and timestamp, and aggregate to each send", arguments: [SessionType.reliableBytes, .unreliableBytes])
    func fragmentsDescribeEachSend(type: SessionType) async throws {
        let pair = try await CallPair.connect("delivery-bytes-\(type.name)")
        let (outbound, inbound) = try await pair.open(200, type)

        var generator = SplitMix64(seed: 0xB17E5 + UInt64(type.rawValue))
        let sizes = [1, 1_200, 1_201, 100 * 1024, Limits.maxBytesSize]
        let sends = sizes.enumerated().map { index, size in (bytes: generator.bytes(size), timestamp: 7_000_000_000 + UInt64(index) * 13) }

        let reader = Task { () -> [ReceivedFragment] in
            try await within("every fragment on stream 200", limit: .seconds(20)) {
                var fragments: [ReceivedFragment] = []
                var finished = 0
                while finished < sends.count, let event = await inbound.events.next() {
                    guard let fragment = event.fragment else {
                        Issue.record("expected a fragment, got a non-fragment event: \(event.closeReason.map { "closed(\($0))" } ?? "message")")
                        break
                    }
                    fragments.append(fragment)
                    if fragment.isLast { finished += 1 }
                }
                return fragments
            }
        }
        for send in sends { try await outbound.send(send.bytes, timestamp: send.timestamp) }
        let fragments = try await reader.value

        // Group by messageID in arrival order.
        var groups: [[ReceivedFragment]] = []
        for fragment in fragments {
            if let last = groups.last?.last, last.messageID == fragment.messageID {
                groups[groups.count - 1].append(fragment)
            } else {
                groups.append([fragment])
            }
        }
        try #require(groups.count == sends.count, "one run of fragments per send")
        let firstID = groups[0][0].messageID

        var aggregator = FragmentAggregator(streamID: 200, sessionType: type)
        var rebuilt: [(bytes: [UInt8], timestamp: UInt64)] = []
        for (index, (group, send)) in zip(groups, sends).enumerated() {
            let fragmentSize = group[0].fragmentSize
            #expect(fragmentSize == 1_200, "send \(index): the loopback default MTU leaves 1200 payload bytes")
            #expect(group[0].messageID == firstID &+ UInt32(index), "send \(index): messageID increments per send")
            var covered = 0
            for (position, fragment) in group.enumerated() {
                #expect(fragment.messageID == group[0].messageID)
                #expect(fragment.totalLength == send.bytes.count, "send \(index): totalLength")
                #expect(fragment.timestamp == send.timestamp, "send \(index): timestamp")
                #expect(fragment.fragmentSize == fragmentSize)
                #expect(fragment.offset % fragmentSize == 0, "send \(index): offset is a multiple of fragmentSize")
                #expect(fragment.offset == position * fragmentSize, "send \(index): fragments in order, none missing or repeated")
                #expect(fragment.bytes.count == min(fragmentSize, send.bytes.count - fragment.offset))
                #expect(fragment.bytes[...] == send.bytes[fragment.offset..<(fragment.offset + fragment.bytes.count)], "send \(index): fragment content at \(fragment.offset)")
                covered += fragment.bytes.count
                if let whole = aggregator.add(fragment) { rebuilt.append(whole) }
            }
            #expect(covered == send.bytes.count, "send \(index): fragments cover 0..<totalLength exactly once")
            #expect(group.count == (send.bytes.count + fragmentSize - 1) / fragmentSize, "send \(index): fragment count")
        }
        #expect(groups.map(\.count) == [1, 1, 2, 86, 3_496])

        try #require(rebuilt.count == sends.count)
        for (index, (whole, send)) in zip(rebuilt, sends).enumerated() {
            #expect(whole.timestamp == send.timestamp, "send \(index): aggregated timestamp")
            #expect(whole.bytes == send.bytes, "send \(index): aggregated content")
        }
        #expect(aggregator.statistics.completedMessages == sends.count)

        await outbound.close()
        #expect(try await drain(inbound, "the inbound session to close") == [.closed(.sessionEnd)])
        try await pair.finish()
    }

    // MARK: Before makeInbound

    @Test("data sent between dataSessionIncoming and makeInbound is delivered after makeInbound, in order", arguments: SessionType.allCases)
    func dataBeforeMakeInboundIsHeld(type: SessionType) async throws {
        // On a virtual clock: the wait below lets the tasks run (each step settles them) instead
        // of sleeping, and no timer is due within it.
        let clock = VirtualClock()
        let pair = try await CallPair.connect("delivery-held-\(type.name)", clock: clock)
        let outbound = try await pair.caller.makeOutboundDataSession(streamID: 300, type: type)
        try await CallPair.awaitIncoming(300, type, on: pair.callee)

        var generator = SplitMix64(seed: 0x4E1D + UInt64(type.rawValue))
        let sends = (0..<20).map { index in (bytes: generator.bytes(100 + index * 37), timestamp: 40 + UInt64(index)) }
        let framesBefore = await pair.callee.statistics.dataFramesReceived
        for send in sends { try await outbound.send(send.bytes, timestamp: send.timestamp) }
        // Every send fits one fragment; wait until the callee has taken all of them off the link.
        let callee = pair.callee
        let arrived = await clock.advance(by: .milliseconds(1), until: {
            await callee.statistics.dataFramesReceived >= framesBefore + sends.count
        }, limit: .seconds(1))
        #expect(arrived, "the callee received 20 data frames before making its inbound session")
        #expect(await callee.statistics.droppedPendingOverflow == 0)

        let inbound = try await pair.callee.makeInboundDataSession(streamID: 300, expecting: type)
        var received: [(bytes: [UInt8], timestamp: UInt64)] = []
        for _ in sends {
            let event = try #require(try await next(inbound, "a held delivery"))
            if let message = event.message {
                received.append((message.bytes, message.timestamp))
            } else if let fragment = event.fragment {
                #expect(fragment.offset == 0 && fragment.totalLength == fragment.bytes.count)
                received.append((fragment.bytes, fragment.timestamp))
            } else {
                Issue.record("stream 300 closed early")
                break
            }
        }
        #expect(received.map(\.timestamp) == sends.map(\.timestamp))
        #expect(received.map(\.bytes) == sends.map(\.bytes))

        // And the session stays live after the held data.
        try await outbound.send([1, 2, 3], timestamp: 99)
        let after = try #require(try await next(inbound, "a live delivery after the held ones"))
        #expect(after.message?.bytes ?? after.fragment?.bytes == [1, 2, 3])
        #expect(after.message?.timestamp ?? after.fragment?.timestamp == 99)
        try await pair.finish()
    }

    @Test("reliable data past maxPendingInboundBytes waits for makeInbound: nothing dropped, and the hang-up sent after it arrives after it", arguments: [SessionType.reliableMessage, .reliableBytes])
    func reliableDataPastThePendingLimitWaits(type: SessionType) async throws {
        let clock = VirtualClock()
        var callee = ConduitConfiguration.testDefaults
        callee.maxPendingInboundBytes = 64 * 1024
        let pair = try await CallPair.connect("delivery-held-limit-\(type.name)", calleeConfiguration: callee, clock: clock)
        let outbound = try await pair.caller.makeOutboundDataSession(streamID: 310, type: type)
        try await CallPair.awaitIncoming(310, type, on: pair.callee)

        // 400 KB, six times the limit, then a hang-up, all before the callee's app answers.
        var generator = SplitMix64(seed: 0x4E1D_0310)
        let sends = (0..<40).map { _ in generator.bytes(10_000) }
        let caller = pair.caller
        let sender = Task {
            for (index, bytes) in sends.enumerated() { try await outbound.send(bytes, timestamp: UInt64(index)) }
            // Waits until the link took everything (in process, acknowledged means written).
            try await caller.hangUp(timeout: .seconds(3_600))
        }
        let calleeCall = pair.callee
        // Loopback fragments to 1,200-byte payloads: this many frames are past the limit.
        let framesPastTheLimit = 64 * 1024 / 1_200 + 1
        let heldTheLimit = await clock.advance(by: .milliseconds(1), until: {
            await calleeCall.statistics.dataFramesReceived >= framesPastTheLimit
        }, limit: .seconds(1))
        #expect(heldTheLimit, "the callee took the limit's worth off the link")

        let inbound = try await pair.callee.makeInboundDataSession(streamID: 310, expecting: type)
        var received: [UInt8] = []
        var closed: DataSessionCloseReason?
        while closed == nil, let event = try await next(inbound, "stream 310's data, then its close") {
            if let message = event.message { received += message.bytes }
            if let fragment = event.fragment { received += fragment.bytes }
            closed = event.closeReason
        }
        let intact = received == sends.flatMap { $0 }
        #expect(intact, "every byte, in order: \(received.count) of \(sends.count * 10_000) bytes")
        #expect(closed == .sessionEnd)
        try await sender.value
        #expect(await pair.callee.statistics.droppedPendingOverflow == 0)
        try await pair.finish()
    }

    @Test("a stream announced before the peer hung up can still be made after the hang-up, and delivers what it held")
    func heldDataIsReadableAfterTheHangUp() async throws {
        let pair = try await CallPair.connect("delivery-held-after-hang-up")
        let outbound = try await pair.caller.makeOutboundDataSession(streamID: 311, type: .reliableMessage)
        let sends: [[UInt8]] = (0..<5).map { Array(repeating: UInt8($0), count: 100 + $0) }
        for (index, bytes) in sends.enumerated() { try await outbound.send(bytes, timestamp: UInt64(index)) }
        try await pair.caller.hangUp(timeout: .seconds(10))

        // The callee's app answers only after it heard of the hang-up.
        var events: [Call.Event] = []
        while let event = try await next(pair.callee.events, "the callee's events up to the hang-up") {
            if case .connected = event { continue }
            events.append(event)
            if case .disconnected = event { break }
        }
        #expect(events == [.dataSessionIncoming(streamID: 311, subgroup: nil, type: .reliableMessage), .disconnected(.remoteHangUp)])
        let inbound = try await pair.callee.makeInboundDataSession(streamID: 311)
        var received: [[UInt8]] = []
        var closed: DataSessionCloseReason?
        while closed == nil, let event = try await next(inbound, "stream 311's held data, then its close") {
            if let message = event.message { received.append(message.bytes) }
            closed = event.closeReason
        }
        #expect(received == sends)
        #expect(closed == .sessionEnd)
        try await pair.finish()
    }

    @Test("each session's statistics count what it sent and received, and answer after the call ended")
    func sessionStatistics() async throws {
        let pair = try await CallPair.connect("delivery-statistics")
        let (outbound, inbound) = try await pair.open(312, .reliableMessage)
        let sizes = [10, 2_000, 30_000]
        for size in sizes { try await outbound.send(Array(repeating: 7, count: size)) }
        for _ in sizes { _ = try #require(try await next(inbound, "a message on stream 312")) }

        let sent = await outbound.statistics
        #expect(sent.messagesQueued == 3 && sent.messagesSent == 3)
        #expect(sent.bytesSent == sizes.reduce(0, +) && sent.queuedBytes == 0 && sent.messagesDiscarded == 0)
        let received = await inbound.statistics
        #expect(received.messagesReceived == 3 && received.bytesReceived == sizes.reduce(0, +))
        #expect(received.heldBytes == 0 && received.droppedPendingOverflow == 0 && received.droppedAfterClose == 0)

        try await pair.finish()
        #expect(await outbound.statistics.bytesSent == sizes.reduce(0, +))
        #expect(await inbound.statistics.messagesReceived == 3)
    }

    // MARK: Several sessions

    @Test("two interleaved sessions each keep their own order")
    func interleavedSessionsKeepOrder() async throws {
        let pair = try await CallPair.connect("delivery-interleaved")
        let (chatOut, chatIn) = try await pair.open(110, .reliableMessage)
        let (fileOut, fileIn) = try await pair.open(111, .reliableBytes)

        var generator = SplitMix64(seed: 0x1A7E_41EA)
        let chat = (0..<200).map { index in (bytes: generator.bytes(generator.logUniformSize(max: 8 * 1024)), timestamp: 1_000 + UInt64(index)) }
        let file = (0..<200).map { index in (bytes: generator.bytes(1 + generator.logUniformSize(max: 1_199)), timestamp: 5_000 + UInt64(index)) }

        let chatReader = Task { try await readMessages(chat.count, from: chatIn) }
        let fileReader = Task { () -> [ReceivedFragment] in
            try await within("200 single-fragment sends on stream 111", limit: .seconds(20)) {
                var fragments: [ReceivedFragment] = []
                while fragments.count < 200, let event = await fileIn.events.next() {
                    guard let fragment = event.fragment else { break }
                    fragments.append(fragment)
                }
                return fragments
            }
        }
        for index in 0..<200 {
            try await chatOut.send(chat[index].bytes, timestamp: chat[index].timestamp)
            try await fileOut.send(file[index].bytes, timestamp: file[index].timestamp)
        }
        let chatReceived = try await chatReader.value
        let fileReceived = try await fileReader.value
        #expect(chatReceived.map(\.timestamp) == chat.map(\.timestamp))
        #expect(chatReceived.map(\.bytes) == chat.map(\.bytes))
        #expect(fileReceived.map(\.timestamp) == file.map(\.timestamp))
        #expect(fileReceived.map(\.bytes) == file.map(\.bytes))
        #expect(fileReceived.allSatisfy { $0.offset == 0 })
        if let first = fileReceived.first?.messageID {
            #expect(fileReceived.map(\.messageID) == (0..<UInt32(fileReceived.count)).map { first &+ $0 })
        }
        try await pair.finish()
    }
}
