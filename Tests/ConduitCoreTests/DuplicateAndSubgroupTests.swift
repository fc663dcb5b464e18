import ConduitCore
import Testing

// Regressions for defects found in review: late duplicates, subgroup IDs the peer never announced,
// frame counting, strict control headers, and a lost producer wake-up.

@Suite("Late duplicates")
struct LateDuplicateTests {
    @Test func replayedFragmentsOfADeliveredMessageAreDroppedAndCounted() throws {
        var reassembler = Reassembler()
        let message = SplitMix64(seed: 7).bytesOf(count: 3_000)
        let frames = try Frames.parsedFragments(message, type: .reliableMessage, messageID: 9, timestamp: 1)
        var delivered = 0
        for frame in frames where reassembler.ingest(frame, now: .zero).message != nil { delivered += 1 }
        #expect(delivered == 1)
        // Replay everything, twice.
        for _ in 0..<2 {
            for frame in frames { #expect(reassembler.ingest(frame, now: .zero) == .dropped) }
        }
        #expect(reassembler.statistics.duplicateFragments == 2 * frames.count)
        #expect(reassembler.statistics.completedMessages == 1)
        #expect(reassembler.incompleteMessages == 0)
        #expect(reassembler.bufferedBytes == 0)
    }

    @Test func aDuplicatedSingleFragmentMessageIsDeliveredOnce() throws {
        var reassembler = Reassembler()
        let frame = try #require(try Frames.parsedFragments([1, 2, 3], type: .unreliableMessage, messageID: 4, timestamp: 1).first)
        #expect(reassembler.ingest(frame, now: .zero).message?.bytes == [1, 2, 3])
        #expect(reassembler.ingest(frame, now: .zero) == .dropped)
        #expect(reassembler.statistics.duplicateFragments == 1)
    }

    @Test func lateDuplicatesCannotExhaustTheCaps() throws {
        var reassembler = Reassembler(configuration: .init(maxIncompleteMessages: 4))
        for id in UInt32(0)..<10 {
            let frames = try Frames.parsedFragments([UInt8](repeating: UInt8(id), count: 2_500), type: .reliableMessage, messageID: id, timestamp: 0)
            for frame in frames { _ = reassembler.ingest(frame, now: .zero) }
            // A stray duplicate of the middle fragment after completion.
            #expect(reassembler.ingest(frames[1], now: .zero) == .dropped)
        }
        #expect(reassembler.statistics.completedMessages == 10)
        #expect(reassembler.statistics.messagesDroppedOverCapacity == 0)
        #expect(reassembler.incompleteMessages == 0)
    }

    @Test func discardForgetsWhatAStreamDelivered() throws {
        var reassembler = Reassembler()
        let frame = try #require(try Frames.parsedFragments([5], type: .reliableMessage, messageID: 0, timestamp: 0).first)
        #expect(reassembler.ingest(frame, now: .zero).message != nil)
        reassembler.discard(streamID: 100, subgroupID: 0)
        // A new session on the same stream starts its message IDs at 0 again.
        #expect(reassembler.ingest(frame, now: .zero).message != nil)
    }
}

@Suite("Completed-message window")
struct CompletedMessageWindowTests {
    @Test func remembersOutOfOrderCompletions() {
        var window = CompletedMessageWindow()
        #expect(!window.contains(0))
        for id: UInt32 in [5, 2, 9, 3] { window.insert(id) }
        #expect([2, 3, 5, 9].allSatisfy(window.contains))
        #expect(![0, 1, 4, 6, 7, 8, 10].contains(where: window.contains))
    }

    @Test func slidesAcrossWordsAndTreatsTooOldAsSeen() {
        var window = CompletedMessageWindow()
        window.insert(10)
        window.insert(70)   // shift by 60: bit for 10 crosses into the next word
        window.insert(200)
        #expect(window.contains(10) && window.contains(70) && window.contains(200))
        #expect(!window.contains(11) && !window.contains(199) && !window.contains(201))
        window.insert(200 + UInt32(CompletedMessageWindow.size))
        #expect(window.contains(200))  // now older than the window: counted as seen
        #expect(!window.contains(201 + UInt32(CompletedMessageWindow.size)))
    }

    @Test func wrapsAroundUInt32() {
        var window = CompletedMessageWindow()
        window.insert(UInt32.max - 1)
        window.insert(1)   // 3 past max-1, in serial arithmetic
        #expect(window.contains(UInt32.max - 1) && window.contains(1))
        #expect(!window.contains(UInt32.max) && !window.contains(0) && !window.contains(2))
    }
}

@Suite("Subgroup IDs")
struct SubgroupIDTests {
    @Test func unsupportingAnUnannouncedSubgroupLeavesTheMainRoomAlone() {
        var harness = CallHarness.connected()
        let main = SessionKey(streamID: 100)
        harness.open(main, .reliableMessage)
        harness.b.unsupportInbound(SessionKey(streamID: 100, subgroup: "other"))
        harness.pump()
        #expect(harness.takeEventsA() == [])
        harness.send(main, [1, 2, 3], timestamp: 5)
        harness.pump()
        #expect(harness.takeEventsB() == [.received(main, .message(bytes: [1, 2, 3], timestamp: 5))])
    }

    @Test func unsupportingBeforeTheSenderOpensIsAnsweredWhenItOpens() {
        var harness = CallHarness.connected()
        let key = SessionKey(streamID: 140)
        harness.b.unsupportInbound(key)
        harness.pump()
        #expect(harness.a.makeOutbound(key, type: .reliableBytes, now: harness.now) == DataSessionFailReason.none)
        harness.pump()
        #expect(harness.takeEventsA() == [.outboundClosed(key, .unsupported)])
        #expect(harness.takeEventsB() == [])
    }

    @Test func dataNamingAnUnknownSubgroupIsDroppedNotDeliveredToTheMainRoom() {
        var harness = CallHarness.connected()
        let main = SessionKey(streamID: 100)
        harness.open(main, .reliableMessage)
        let frame = Frames.raw(stream: 100, subgroup: 7, messageID: 0, total: 3, fragmentSize: 1_200, payloadLength: 3)
        harness.b.handle(datagram: frame, now: harness.now)
        #expect(harness.takeEventsB() == [])
        #expect(harness.b.statistics.droppedUnknownSubgroup == 1)
    }

    @Test func aPeerCannotAnnounceUnboundedSubgroups() {
        var harness = CallHarness.connected()
        for id in 1...(CallMachine.maxRemoteSubgroups + 10) {
            let name = try! SubgroupName("g\(id)")
            let open = ControlFrame.sessionOpen(streamID: 100, subgroupID: UInt16(id), subgroup: name, type: .reliableMessage)
            harness.b.handle(datagram: open.encoded, now: harness.now)
        }
        #expect(harness.takeEventsB().count == CallMachine.maxRemoteSubgroups)
        #expect(harness.b.statistics.droppedUnknownSubgroup == 10)
    }
}

@Suite("Counting and strictness")
struct CountingAndStrictnessTests {
    @Test func controlFramesAreCountedAsSent() {
        let harness = CallHarness.connected()
        #expect(harness.a.statistics.framesSent == 1)  // the hello
        #expect(harness.b.statistics.framesSent == 1)
    }

    @Test func unusedControlHeaderFieldsMustBeZero() {
        var hello = ControlFrame.hello(peer: "p", dataSessionsSupported: true).encoded
        hello[3] = 100  // a stream ID on a hello
        #expect(Frames.controlError(hello) == .reservedBitsSet)
        var goodbye = ControlFrame.goodbye.encoded
        goodbye[5] = 1  // a reason on a goodbye
        #expect(Frames.controlError(goodbye) == .reservedBitsSet)
        var unsupported = ControlFrame.sessionUnsupported(streamID: 100, subgroupID: 0).encoded
        unsupported[4] = 2  // a session type on an unsupported frame
        #expect(Frames.controlError(unsupported) == .reservedBitsSet)
    }

    @Test func signedNumbersAreNotPortsOrRates() {
        #expect(throws: ConduitError.self) { try TransportURL(parsing: "udp://127.0.0.1:+80") }
        #expect(throws: ConduitError.self) { try RateLimit(parsing: "+5") }
    }

    @Test func aggregatorRefusesANegativeLength() {
        var aggregator = FragmentAggregator(streamID: 100)
        let fragment = ReceivedFragment(messageID: 0, offset: 0, totalLength: -1, fragmentSize: 1_200, timestamp: 0, bytes: [])
        #expect(aggregator.add(fragment) == nil)
    }
}

@Suite("AsyncBoundedChannel wake-ups")
struct ChannelWakeUpTests {
    /// A producer over capacity must be woken by whichever path takes its element, including the
    /// consumer that was already waiting. Before the fix a few in ten thousand of these hung:
    /// a hang fails the test at its time limit (the only use of the wall clock here). Alone it takes
    /// about 3 s under ThreadSanitizer; beside 7 other tests there, over a minute (CI, stop 30).
    @Test(.timeLimit(.minutes(3))) func overweightProducerIsAlwaysWoken() async throws {
        for _ in 0..<20_000 {
            let channel = AsyncBoundedChannel<Int>(capacity: 1) { $0 }
            async let taken = channel.next()
            await channel.send(2)
            #expect(await taken == 2)
        }
    }
}
