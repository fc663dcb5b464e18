import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// The relay benchmark's setting as a test: one sender, 50 receivers, batches of routed frames,
/// every receiver's queue drained after each batch. Every frame reaches every receiver once.
@Suite struct FanoutTests {
    @Test func everyFrameReachesEveryReceiver() {
        var relay = RelayMachine(configuration: RelayConfiguration(maxMembersPerRoom: 64))
        let now = ConduitInstant(nanoseconds: 1)
        var out = DatagramBatch()
        // A driver must write out every connection a `.transmit` names (the machine signals a
        // connection once until its queue is empty again), and answer every `.authorize`.
        func drain() -> Int {
            var delivered = 0
            while let action = relay.pollAction() {
                switch action {
                case .transmit(let id):
                    out.removeAll()
                    delivered += relay.pollTransmit(id, into: &out, maxBytes: .max)
                case .authorize(let who, let request):
                    relay.admit(who, grant: RelayGrant(room: request.room, peer: request.peer, canPublish: true, canSubscribe: true), now: now)
                case .close, .resumeReading:
                    break
                }
            }
            return delivered
        }
        for index in 0...50 {
            let id = RelayConnectionID(UInt64(index + 1))
            _ = relay.connectionOpened(id, now: now)
            relay.handle(id, datagram: RoomControlFrame.join(room: "bench", peer: PeerID(stringLiteral: "peer\(index)"), dataSessionsSupported: true, token: [1]).encoded, now: now)
            _ = drain()
        }
        // The coalesced peer list goes out first, so the rounds count data only.
        relay.handleTimeout(now: now + .seconds(1))
        #expect(drain() == 51)
        for round in 0..<3 {
            var batch = DatagramBatch()
            for message in 0..<100 {
                let frame = dataFrame(stream: 100, subgroupID: 0, text: "m\(message)", messageID: UInt32(message))
                frame.withUnsafeBytes { batch.append($0, prefix: (0x12, 0, 0, 0)) }
            }
            relay.handle(RelayConnectionID(1), batch: batch, now: now)
            #expect(drain() == 100 * 50, "round \(round)")
        }
    }
}
