import ConduitARQ
import ConduitCore

/// Real exchanges between the library's own machines, recorded datagram by datagram: the seeds
/// of the frame and packet targets are what a call and a reliable link actually put on the wire.
enum SeedTraffic {
    /// Everything two call machines send each other in a short call: hellos, a session opened on
    /// each type, a small and a fragmented message, a close, an unsupported stream, goodbye.
    static func call() -> [[UInt8]] {
        var recorder = Exchange(a: CallMachine(localPeer: "alice"), b: CallMachine(localPeer: "bob"))
        recorder.run()
        var now = recorder.now
        let main = SessionKey(streamID: StreamID(100))
        let sub = SessionKey(streamID: StreamID(200), subgroup: "breakout")
        _ = recorder.a.makeOutbound(main, type: .reliableMessage, now: now)
        _ = recorder.a.makeOutbound(sub, type: .unreliableMessage, now: now)
        _ = recorder.b.makeOutbound(SessionKey(streamID: StreamID(300)), type: .reliableBytes, now: now)
        _ = recorder.b.makeInbound(main)
        _ = recorder.b.makeInbound(sub)
        recorder.run()
        now = recorder.now
        _ = recorder.a.enqueue(main, bytes: Array("hello, bob".utf8), timestamp: 42, now: now)
        _ = recorder.a.enqueue(main, bytes: (0..<3_000).map { UInt8(truncatingIfNeeded: $0) }, timestamp: 43, now: now)
        _ = recorder.a.enqueue(sub, bytes: [], timestamp: 44, now: now)
        _ = recorder.b.enqueue(SessionKey(streamID: StreamID(300)), bytes: Array(repeating: 7, count: 100), timestamp: 45, now: now)
        recorder.run()
        recorder.a.closeOutbound(main)
        recorder.run()
        recorder.a.hangUp()
        recorder.run()
        return recorder.datagrams
    }

    /// Two reliability engines exchanging frames on several channels, ordered and not, with a
    /// lifetime, with and without the CRC32C trailer, through a path that loses every fifth packet
    /// (so acknowledgements carry gaps and retransmissions and forwards happen).
    static func reliableLink(checksum: ARQEngine.Checksum) -> [[UInt8]] {
        var configuration = ARQEngine.Configuration()
        configuration.checksum = checksum
        var now = ConduitInstant.zero
        var engines = [ARQEngine(configuration: configuration, now: now), ARQEngine(configuration: configuration, now: now)]
        var recorded: [[UInt8]] = []
        var sent = 0
        let deliveries: [Reliability] = [.reliableOrdered, Reliability(ordered: false), Reliability(ordered: true, limit: .maxPacketLifeTime(milliseconds: 50)),
                                         Reliability(ordered: false, limit: .maxRetransmits(0))]
        for index in 0..<24 {
            let delivery = deliveries[index % deliveries.count]
            let size = [1, 200, 1_100, 0][index % 4]
            _ = engines[index % 2].send(Array(repeating: UInt8(index), count: size), channel: UInt32(index % 3), delivery: delivery, now: now)
        }
        for _ in 0..<200 {
            for side in 0..<2 {
                var batch = DatagramBatch()
                _ = engines[side].pollTransmit(now: now, into: &batch)
                batch.forEachDatagram { datagram in
                    sent += 1
                    if recorded.count < 64 { recorded.append(Array(datagram)) }
                    if sent % 5 != 0 { engines[1 - side].handle(datagram: datagram, now: now) }
                }
                while engines[side].pollDelivery(now: now) != nil {}
            }
            now = now + .milliseconds(20)
            for side in 0..<2 { engines[side].handleTimeout(now: now) }
        }
        return recorded
    }

    /// The packets of frames too large for a packet, which go in parts (DATA's part flag): one
    /// of 3,000 bytes with a lifetime, one of 2,500 without, on a link without a checksum.
    static func framesInParts() -> [[UInt8]] {
        var configuration = ARQEngine.Configuration()
        configuration.checksum = .none
        var engine = ARQEngine(configuration: configuration, now: .zero)
        _ = engine.send(Array(repeating: 0x5A, count: 3_000), channel: 2, delivery: Reliability(ordered: true, limit: .maxPacketLifeTime(milliseconds: 500)), now: .zero)
        _ = engine.send(Array(repeating: 0xA5, count: 2_500), channel: 1, now: .zero)
        var batch = DatagramBatch()
        _ = engine.pollTransmit(now: .zero, into: &batch)
        var recorded: [[UInt8]] = []
        batch.forEachDatagram { recorded.append(Array($0)) }
        return recorded
    }
}

/// Two sans-IO machines wired back to back, every datagram recorded (bounded rounds, virtual time).
struct Exchange<A: SansIOMachine, B: SansIOMachine> {
    var a: A
    var b: B
    var now = ConduitInstant.zero
    var datagrams: [[UInt8]] = []

    /// Passes datagrams both ways until neither side has anything to send, stepping time by 10 ms.
    mutating func run(rounds: Int = 50) {
        for _ in 0..<rounds {
            var fromA = DatagramBatch(), fromB = DatagramBatch()
            let sent = a.pollTransmit(now: now, into: &fromA, maxBytes: 64 * 1_024) + b.pollTransmit(now: now, into: &fromB, maxBytes: 64 * 1_024)
            fromA.forEachDatagram { datagrams.append(Array($0)) }
            fromB.forEachDatagram { datagrams.append(Array($0)) }
            b.handle(batch: fromA, now: now)
            a.handle(batch: fromB, now: now)
            while a.pollEvent() != nil {}
            while b.pollEvent() != nil {}
            now = now + .milliseconds(10)
            a.handleTimeout(now: now)
            b.handleTimeout(now: now)
            if sent == 0 { return }
        }
    }
}
