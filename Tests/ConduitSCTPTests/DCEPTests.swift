#if SCTP
import ConduitCore
@testable import ConduitSCTP
import Testing

@Suite("DCEP messages (RFC 8832)")
struct DCEPTests {
    @Test("DATA_CHANNEL_OPEN round-trips every channel type, label and protocol")
    func openRoundTrips() throws {
        let reliabilities: [Reliability] = [
            .reliableOrdered,
            Reliability(ordered: false, limit: .none),
            Reliability(ordered: true, limit: .maxRetransmits(3)),
            Reliability(ordered: false, limit: .maxRetransmits(0)),
            Reliability(ordered: true, limit: .maxPacketLifeTime(milliseconds: 1500)),
            Reliability(ordered: false, limit: .maxPacketLifeTime(milliseconds: 70_000)),
        ]
        for reliability in reliabilities {
            let open = DataChannelOpen(reliability: reliability, priority: 512, label: "chät", protocol: "conduit/1")
            let parsed = try DCEPMessage(parsing: open.bytes)
            #expect(parsed == .open(open))
        }
    }

    @Test("the OPEN wire layout matches RFC 8832 section 5.1")
    func openLayout() {
        let open = DataChannelOpen(reliability: Reliability(ordered: false, limit: .maxRetransmits(5)), priority: 256, label: "ab", protocol: "p")
        #expect(open.bytes == [0x03, 0x81, 0x01, 0x00, 0, 0, 0, 5, 0, 2, 0, 1, 0x61, 0x62, 0x70])
        let timed = DataChannelOpen(reliability: Reliability(ordered: true, limit: .maxPacketLifeTime(milliseconds: 0x0102_0304)), label: "", protocol: "")
        #expect(timed.bytes == [0x03, 0x02, 0x01, 0x00, 1, 2, 3, 4, 0, 0, 0, 0])
    }

    @Test("the ACK is one byte, 0x02")
    func ack() throws {
        #expect(DataChannelAck().bytes == [0x02])
        #expect(try DCEPMessage(parsing: [0x02]) == .ack)
        // pion/datachannel sends its ACK zero-padded to 4 bytes.
        #expect(try DCEPMessage(parsing: [0x02, 0, 0, 0]) == .ack)
    }

    @Test("malformed messages are refused with a typed reason")
    func malformed() {
        let valid = DataChannelOpen(reliability: .reliableOrdered, label: "abc", protocol: "xy").bytes
        let cases: [([UInt8], DCEPError.Code)] = [
            ([], .truncated),
            ([0x03, 0x00, 0x00], .truncated),
            (Array(valid.dropLast()), .lengthMismatch),
            (valid + [0], .lengthMismatch),
            ([0x03, 0x07] + valid[2...], .unknownChannelType),
            ([0x03, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0xFF], .invalidUTF8),
            ([0x02, 0x01], .lengthMismatch),
            ([0x09], .unknownMessageType),
        ]
        for (bytes, code) in cases {
            #expect(throws: DCEPError.self) { try DCEPMessage(parsing: bytes) }
            do {
                _ = try DCEPMessage(parsing: bytes)
            } catch {
                #expect(error.code == code, "\(bytes)")
            }
        }
    }

    @Test("PPIDs per RFC 8831 section 8, empty messages as their own PPIDs")
    func ppids() {
        #expect(PayloadProtocolIdentifier.dcep.rawValue == 50)
        #expect(DataChannelMessageKind.string.ppid(count: 3) == .string && PayloadProtocolIdentifier.string.rawValue == 51)
        #expect(DataChannelMessageKind.binary.ppid(count: 3) == .binary && PayloadProtocolIdentifier.binary.rawValue == 53)
        #expect(DataChannelMessageKind.string.ppid(count: 0).rawValue == 56)
        #expect(DataChannelMessageKind.binary.ppid(count: 0).rawValue == 57)
        #expect(DataChannelMessageKind.received(.emptyBinary)! == (.binary, true))
        #expect(DataChannelMessageKind.received(.dcep) == nil)
    }

    @Test("stream IDs: even for the client, odd for the server, lowest free first, reused after release")
    func streamIDs() {
        var client = StreamIDAllocator(isClient: true, streamCount: 8)
        var server = StreamIDAllocator(isClient: false, streamCount: 8)
        #expect([client.allocate(), client.allocate(), client.allocate()] == [0, 2, 4])
        #expect([server.allocate(), server.allocate()] == [1, 3])
        client.release(2)
        #expect(client.allocate() == 2)
        #expect(client.allocate() == 6)
        #expect(client.allocate() == nil)
        #expect(client.isOurs(4) && !client.isOurs(5) && server.isOurs(5))
    }
}
#endif
