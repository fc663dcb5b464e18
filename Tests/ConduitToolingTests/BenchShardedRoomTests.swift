import Conduit
import ConduitCore
import ConduitLoopback
import ConduitRooms
import ConduitTooling
import Testing

/// `conduit bench --room --in-process`: the relay's shard group in process with synthetic members.
/// Only behaviour is asserted (every message once, in order; rooms spanning shards; a checker
/// that sees what is wrong), never speed.
@Suite("In-process room bench: the relay's shards and synthetic members", .timeLimit(.minutes(2)))
struct BenchShardedRoomTests {
    @Test("a small room on 1 and 2 shards: every receiver gets every sender's messages exactly once, in order")
    func everyMessageOnceInOrder() async throws {
        var options = BenchShardedRoom.Options()
        options.senders = 3
        options.receivers = 5
        options.messages = 400
        options.size = 100
        options.framesPerWrite = 16
        options.threads = [1, 2]
        options.runs = 1
        options.timeout = .seconds(60)
        let report = try await BenchShardedRoom(options: options).run()
        #expect(report.runs.map(\.threads) == [1, 2])
        for run in report.runs {
            #expect(run.ended == "complete")
            #expect(run.expected == 3 * 400 * 5)
            #expect(run.delivered == run.expected)
            #expect(run.missing == 0)
            #expect(run.duplicates == 0)
            #expect(run.outOfOrder == 0)
            #expect(run.malformed == 0)
            #expect(run.crossShardLost == 0)
            #expect(run.isComplete)
        }
        // Links alternate between the shards: on two, the senders' frames cross to the other shard.
        #expect(report.runs[0].crossShardFrames == 0)
        #expect(report.runs[1].crossShardFrames >= 3 * 400)
        #expect(report.byThreads.map(\.threads) == [1, 2])
        #expect(report.byThreads.first?.ratioToFirst == 1)
        #expect(report.byThreads.first?.ratioToFirstPerRound == BenchSpread(median: 1, min: 1, max: 1))
        #expect(report.isComplete)
    }

    @Test("bad options are refused before anything runs")
    func badOptions() async {
        var tooLarge = BenchShardedRoom.Options()
        tooLarge.size = 2_000  // more than one loopback fragment
        await #expect(throws: ConduitError.self) { try await BenchShardedRoom(options: tooLarge).run() }
        var noThreads = BenchShardedRoom.Options()
        noThreads.threads = []
        await #expect(throws: ConduitError.self) { try await BenchShardedRoom(options: noThreads).run() }
    }

    @Test("the receivers' check counts a duplicate, a reordering and a missing message, and data from no known sender")
    func checkerSeesWhatIsWrong() async throws {
        let transport = LoopbackTransport(hub: LoopbackHub())
        let listener = try await transport.listen(on: TransportURL(parsing: "loopback://checker"))
        let client = try await transport.connect(to: listener.localURL)
        let relaySide = try #require(try await listener.accept())
        let status = SyntheticMemberStatus()
        let reading = Task {
            var reader = SyntheticRoomReader(link: client, status: status, receiver: 0, progress: SyntheticRoomProgress(senders: 1, receivers: 1), senders: 1, size: 10)
            return await reader.run()
        }
        // What a relay would write: joined as member 1, a peer list naming member 2 as sender-0,
        // then sender-0's session with messages 0, 1, 1 (duplicate), 3 (2 skipped), 2 (late),
        // a frame from member 9 (nobody), and the close.
        var batch = DatagramBatch()
        batch.append(RoomControlFrame.joined(member: 1).encoded)
        let sender = PeerID(unchecked: SyntheticRoomReader.senderPrefix + "0")
        batch.append(RoomControlFrame.peers(PeerListUpdate(version: 1, isSnapshot: true, joined: [
            RoomMember(member: 1, peer: "receiver-0", dataSessionsSupported: true), RoomMember(member: 2, peer: sender, dataSessionsSupported: true),
        ], left: [])).encoded)
        batch.append(RelayEnvelope.wrap(.relayed, member: 2, ControlFrame.sessionOpen(streamID: 100, subgroupID: 0, subgroup: nil, type: .reliableMessage).encoded))
        for (member, messageID) in [(2, 0), (2, 1), (2, 1), (2, 3), (2, 2), (9, 4)] {
            var frame = RelayEnvelope(kind: .relayed, member: UInt16(member)).bytes + [UInt8](repeating: 0, count: DataFrameHeader.size) + [UInt8](repeating: 7, count: 10)
            frame.withUnsafeMutableBytes { bytes in
                DataFrameHeader(streamID: 100, sessionType: .reliableMessage, messageID: UInt32(messageID), fragmentOffset: 0, totalLength: 10, fragmentSize: 1_196, timestamp: 0)
                    .encode(into: UnsafeMutableRawBufferPointer(rebasing: bytes[RelayEnvelope.size...]))
            }
            batch.append(frame)
        }
        batch.append(RelayEnvelope.wrap(.relayed, member: 2, ControlFrame.sessionClose(streamID: 100, subgroupID: 0, reason: .sessionEnd).encoded))
        try await relaySide.write(batch)
        let tally = await reading.value
        #expect(status.member == 1)
        #expect(status.othersKnown == 1)
        #expect(tally.ended == "complete")
        #expect(tally.delivered == 3, "0, 1 and 3 were taken in turn")
        #expect(tally.duplicates == 2, "the second 1, and 2 once 3 had come")
        #expect(tally.outOfOrder == 1, "3 came while 2 was due")
        #expect(tally.unknownSender == 1)
        await client.close()
        await relaySide.close()
        await listener.close()
    }
}
