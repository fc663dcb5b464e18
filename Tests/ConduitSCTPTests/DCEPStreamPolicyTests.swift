#if SCTP
@testable import ConduitSCTP
import ConduitCore
import Testing

/// The DCEP rules without sockets: stream parity without DTLS, collisions, refused OPENs,
/// unknown message types and PPIDs (RFC 8832 section 6, RFC 8831 section 6.6).
@Suite("DCEP stream rules (RFC 8832 section 6, RFC 8831 section 6.6)")
struct DCEPStreamPolicyTests {
    static let open = DataChannelOpen(reliability: .reliableOrdered, label: "chat", protocol: "p").bytes

    static func answer(_ bytes: [UInt8], stream: UInt16 = 1, _ state: DCEPStreamPolicy.StreamState) -> DCEPStreamPolicy.DCEPAnswer {
        DCEPStreamPolicy.answer(dcep: bytes, stream: stream, state: state, streamCount: 1024)
    }

    @Test("an OPEN on a free stream is accepted on either parity: without DTLS there is no role to check")
    func eitherParity() {
        let expected = DCEPStreamPolicy.DCEPAnswer.accept(DataChannelOpen(reliability: .reliableOrdered, label: "chat", protocol: "p"))
        for stream: UInt16 in [0, 1, 2, 3, 1022, 1023] {
            #expect(Self.answer(Self.open, stream: stream, .unused) == expected, "stream \(stream)")
        }
        #expect(Self.answer(Self.open, stream: 1024, .unused) == .ignore(.streamOutOfRange))
    }

    @Test("both ends opening the same stream: each refuses the other's OPEN with a reset and no ACK")
    func collision() {
        // Each end sent its OPEN on stream 1 and has not seen an ACK when the other's OPEN arrives.
        let atClient = Self.answer(Self.open, stream: 1, .openedLocally(acked: false))
        let atServer = Self.answer(Self.open, stream: 1, .openedLocally(acked: false))
        #expect(atClient == .refuse(.collision) && atServer == .refuse(.collision))
    }

    @Test("an OPEN on a stream in use is refused (reset, no ACK); on a stream being reset, only counted")
    func streamInUse() {
        #expect(Self.answer(Self.open, .openedLocally(acked: true)) == .refuse(.streamInUse))
        #expect(Self.answer(Self.open, .openedByPeer) == .refuse(.streamInUse))
        #expect(Self.answer(Self.open, .closing) == .ignore(.streamClosing))
    }

    @Test("a malformed OPEN is refused with a reset, never accepted, and never ends the association")
    func malformedOpen() {
        #expect(Self.answer([0x03, 0x00], .unused) == .refuse(.malformedOpen(.truncated)))
        #expect(Self.answer(Self.open + [0], .unused) == .refuse(.malformedOpen(.lengthMismatch)))
        var badType = Self.open
        badType[1] = 0x05
        #expect(Self.answer(badType, .openedByPeer) == .refuse(.malformedOpen(.unknownChannelType)))
        #expect(Self.answer([0x03, 0x00], .closing) == .ignore(.streamClosing))
    }

    @Test("unknown DCEP message types are ignored and counted, whatever the stream's state")
    func unknownTypes() {
        let states: [DCEPStreamPolicy.StreamState] = [.unused, .openedByPeer, .openedLocally(acked: false), .openedLocally(acked: true), .closing]
        for type: UInt8 in [0x00, 0x01, 0x04, 0x7F, 0xFF] {
            for state in states { #expect(Self.answer([type, 1, 2, 3], state) == .ignore(.unknownMessageType)) }
        }
        #expect(Self.answer([], .openedByPeer) == .ignore(.unknownMessageType))
    }

    @Test("an ACK acknowledges only our own pending OPEN; any other ACK is stray")
    func acks() {
        #expect(Self.answer([0x02], .openedLocally(acked: false)) == .acknowledged)
        #expect(Self.answer([0x02], .openedLocally(acked: true)) == .ignore(.strayAck))
        #expect(Self.answer([0x02], .openedByPeer) == .ignore(.strayAck))
        #expect(Self.answer([0x02], .unused) == .ignore(.strayAck))
        #expect(Self.answer([0x02, 0x00, 0x00, 0x00], .openedLocally(acked: false)) == .acknowledged)
        #expect(Self.answer([0x02, 0x07], .openedLocally(acked: false)) == .ignore(.strayAck))
    }

    @Test("user messages: known PPIDs delivered, unsupported ones close the channel, none without a channel")
    func userMessages() {
        let open = DCEPStreamPolicy.StreamState.openedByPeer
        #expect(DCEPStreamPolicy.answer(userMessagePPID: 51, state: open, binaryOnly: false) == .deliver(.string, isEmpty: false))
        #expect(DCEPStreamPolicy.answer(userMessagePPID: 53, state: .openedLocally(acked: false), binaryOnly: false) == .deliver(.binary, isEmpty: false))
        #expect(DCEPStreamPolicy.answer(userMessagePPID: 56, state: open, binaryOnly: false) == .deliver(.string, isEmpty: true))
        #expect(DCEPStreamPolicy.answer(userMessagePPID: 57, state: open, binaryOnly: true) == .deliver(.binary, isEmpty: true))
        for ppid: UInt32 in [0, 52, 54, 99, 0xFFFF_FFFF] {
            #expect(DCEPStreamPolicy.answer(userMessagePPID: ppid, state: open, binaryOnly: false) == .closeChannelUnsupportedPPID)
            #expect(DCEPStreamPolicy.answer(userMessagePPID: ppid, state: .unused, binaryOnly: false) == .dropNoChannel)
        }
        #expect(DCEPStreamPolicy.answer(userMessagePPID: 51, state: open, binaryOnly: true) == .closeChannelUnsupportedPPID)
        #expect(DCEPStreamPolicy.answer(userMessagePPID: 53, state: .closing, binaryOnly: false) == .dropNoChannel)
    }

    @Test("our allocator skips streams of our parity that the peer holds, until they are released")
    func reservedStreams() {
        var server = StreamIDAllocator(isClient: false, streamCount: 8)
        server.reserve(1)
        server.reserve(2)
        #expect(server.allocate() == 3)
        server.release(1)
        #expect(server.allocate() == 1)
        #expect(server.allocate() == 5)
        #expect(server.count == 4)
    }

    @Test("the peer's ABORT reason is read from the chunk usrsctp hands over")
    func abortReasons() {
        let text = Array("bye now".utf8)
        let cause: [UInt8] = [0, 12, 0, UInt8(4 + text.count)] + text + [0]  // padded to 4
        let other: [UInt8] = [0, 1, 0, 8, 0, 0, 0, 0]  // Invalid Stream Identifier
        func chunk(_ causes: [UInt8]) -> [UInt8] { [6, 0, 0, UInt8(4 + causes.count)] + causes }
        #expect(SCTPCloseReason.abortReason(fromChunk: chunk(cause)) == "bye now")
        #expect(SCTPCloseReason.abortReason(fromChunk: chunk(other + cause)) == "bye now")
        #expect(SCTPCloseReason.abortReason(fromChunk: chunk(other)) == nil)
        #expect(SCTPCloseReason.abortReason(fromChunk: chunk([])) == nil)
        #expect(SCTPCloseReason.abortReason(fromChunk: [1, 0, 0, 4]) == nil)
        #expect(SCTPCloseReason.abortReason(fromChunk: chunk([0, 12, 0, 40, 1])) == nil)
        #expect(SCTPCloseReason.abortedByPeer(reason: "x").isAbnormal && !SCTPCloseReason.shutDownByPeer.isAbnormal)
        #expect(SCTPCloseReason.abortedByPeer(reason: "x").error("peer").code == .connectionClosed)
    }
}
#endif
