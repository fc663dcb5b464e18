#if SRTP
import ConduitCore
import ConduitSRTP
import Testing

/// A deterministic RTP packet: V=2, PT 96, the given sequence number, SSRC 0x11223344, `count`
/// payload bytes.
private func rtpPacket(sequence: UInt16, payload count: Int = 40, ssrc: UInt32 = 0x1122_3344) -> [UInt8] {
    var packet: [UInt8] = [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0x10, 0x00]
    packet += [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)]
    packet += (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(sequence)) }
    return packet
}

/// A receiver report with no report blocks from SSRC 0x11223344, padded with `extra` bytes.
private func rtcpPacket(extra: Int = 16) -> [UInt8] {
    let words = 1 + extra / 4
    return [0x80, 201, 0, UInt8(words), 0x11, 0x22, 0x33, 0x44] + (0..<(extra / 4 * 4)).map { UInt8($0) }
}

private func keys(_ profile: SRTPProfile, seed: UInt8) throws(ConduitError) -> SRTPKeyMaterial {
    try SRTPKeyMaterial(
        profile: profile,
        keyAndSalt: (0..<profile.keyMaterialLength).map { UInt8(truncatingIfNeeded: Int(seed) &* 31 &+ $0 &* 13) }
    )
}

/// Two ends with mirrored keys: A's outbound keys are B's inbound keys and the other way round.
private func pair(_ profile: SRTPProfile) throws(ConduitError) -> (a: SRTPSession, b: SRTPSession) {
    let aToB = try keys(profile, seed: 1)
    let bToA = try keys(profile, seed: 2)
    return (
        try SRTPSession(profile: profile, outbound: aToB, inbound: bToA),
        try SRTPSession(profile: profile, outbound: bToA, inbound: aToB)
    )
}

@Suite("SRTP known answers (libsrtp's reference packets)")
struct SRTPKnownAnswerTests {
    private func check(
        profile: SRTPProfile,
        key: [UInt8],
        srtp: [UInt8],
        srtcp: [UInt8]
    ) throws {
        let material = try SRTPKeyMaterial(profile: profile, keyAndSalt: key)
        let session = try SRTPSession(profile: profile, outbound: material, inbound: material, replayWindow: 128)

        var rtp = LibSRTPVectors.rtpPlaintext
        try session.protectRTP(&rtp)
        #expect(rtp == srtp)
        var rtcp = LibSRTPVectors.rtcpPlaintext
        try session.protectRTCP(&rtcp)
        #expect(rtcp == srtcp)

        var inboundRTP = srtp
        #expect(session.unprotectRTP(&inboundRTP) == .ok)
        #expect(inboundRTP == LibSRTPVectors.rtpPlaintext)
        var inboundRTCP = srtcp
        #expect(session.unprotectRTCP(&inboundRTCP) == .ok)
        #expect(inboundRTCP == LibSRTPVectors.rtcpPlaintext)

        #expect(session.statistics.protected == 2)
        #expect(session.statistics.unprotected == 2)
    }

    @Test("srtp_validate: AES_CM_128_HMAC_SHA1_80, RTP and RTCP")
    func aesCM128HmacSha1_80() throws {
        try check(
            profile: .aesCM128HmacSha1_80,
            key: LibSRTPVectors.testKey,
            srtp: LibSRTPVectors.srtpCiphertextAESCM80,
            srtcp: LibSRTPVectors.srtcpCiphertextAESCM80
        )
    }

    @Test("srtp_validate_gcm: AEAD_AES_128_GCM, RTP and RTCP")
    func aeadAES128GCM() throws {
        try check(
            profile: .aeadAES128GCM,
            key: LibSRTPVectors.testKeyGCM,
            srtp: LibSRTPVectors.srtpCiphertextGCM,
            srtcp: LibSRTPVectors.srtcpCiphertextGCM
        )
    }
}

@Suite("SRTP sessions")
struct SRTPSessionTests {
    @Test("Round trip both ways with mirrored keys", arguments: SRTPProfile.allCases)
    func roundTrip(profile: SRTPProfile) throws {
        let (a, b) = try pair(profile)
        for sequence in UInt16(1)...20 {
            let plaintext = rtpPacket(sequence: sequence, payload: Int(sequence) * 5)
            var packet = plaintext
            try a.protectRTP(&packet)
            #expect(packet.count > plaintext.count)
            #expect(packet[12...] != plaintext[12...])
            #expect(b.unprotectRTP(&packet) == .ok)
            #expect(packet == plaintext)

            var back = plaintext
            try b.protectRTP(&back)
            #expect(a.unprotectRTP(&back) == .ok)
            #expect(back == plaintext)
        }
        for _ in 0..<5 {
            let plaintext = rtcpPacket()
            var packet = plaintext
            try a.protectRTCP(&packet)
            #expect(b.unprotectRTCP(&packet) == .ok)
            #expect(packet == plaintext)
            var back = plaintext
            try b.protectRTCP(&back)
            #expect(a.unprotectRTCP(&back) == .ok)
            #expect(back == plaintext)
        }
        #expect(a.statistics.protected == 25)
        #expect(a.statistics.unprotected == 25)
        #expect(b.statistics == a.statistics)

        // A's own packets are under A's outbound keys, which A does not accept inbound.
        var own = rtpPacket(sequence: 100)
        try a.protectRTP(&own)
        #expect(a.unprotectRTP(&own) == .authenticationFailed)
    }

    @Test("Every single-bit flip of an SRTP packet is rejected; the original is accepted afterwards")
    func rtpBitFlips() throws {
        let (a, b) = try pair(.aesCM128HmacSha1_80)
        let plaintext = rtpPacket(sequence: 7, payload: 24)
        var original = plaintext
        try a.protectRTP(&original)
        var accepted = 0
        for bit in 0..<(original.count * 8) {
            var forged = original
            forged[bit / 8] ^= 1 << UInt8(bit % 8)
            let verdict = b.unprotectRTP(&forged)
            #expect(verdict == .authenticationFailed || verdict == .malformed, "bit \(bit): \(verdict)")
            if verdict == .ok { accepted += 1 }
        }
        #expect(accepted == 0)
        #expect(b.statistics.authFailures + b.statistics.malformed == UInt64(original.count * 8))
        var packet = original
        #expect(b.unprotectRTP(&packet) == .ok)
        #expect(packet == plaintext)
    }

    @Test("Every single-bit flip of an SRTCP packet is rejected; the original is accepted afterwards")
    func rtcpBitFlips() throws {
        let (a, b) = try pair(.aesCM128HmacSha1_80)
        let plaintext = rtcpPacket(extra: 12)
        var original = plaintext
        try a.protectRTCP(&original)
        for bit in 0..<(original.count * 8) {
            var forged = original
            forged[bit / 8] ^= 1 << UInt8(bit % 8)
            let verdict = b.unprotectRTCP(&forged)
            #expect(verdict == .authenticationFailed || verdict == .malformed, "bit \(bit): \(verdict)")
        }
        var packet = original
        #expect(b.unprotectRTCP(&packet) == .ok)
        #expect(packet == plaintext)
    }

    @Test("The same protected packet twice is a replay the second time", arguments: SRTPProfile.allCases)
    func replay(profile: SRTPProfile) throws {
        let (a, b) = try pair(profile)
        var protected = rtpPacket(sequence: 42)
        try a.protectRTP(&protected)
        var first = protected
        #expect(b.unprotectRTP(&first) == .ok)
        var second = protected
        #expect(b.unprotectRTP(&second) == .replayed)

        var rtcp = rtcpPacket()
        try a.protectRTCP(&rtcp)
        var firstRTCP = rtcp
        #expect(b.unprotectRTCP(&firstRTCP) == .ok)
        var secondRTCP = rtcp
        #expect(b.unprotectRTCP(&secondRTCP) == .replayed)

        #expect(b.statistics.replays == 2)
        #expect(b.statistics.unprotected == 2)
    }

    @Test("A packet older than the replay window is a replay")
    func olderThanWindow() throws {
        let aToB = try keys(.aesCM128HmacSha1_80, seed: 1)
        let bToA = try keys(.aesCM128HmacSha1_80, seed: 2)
        let a = try SRTPSession(outbound: aToB, inbound: bToA, replayWindow: 64)
        let b = try SRTPSession(outbound: bToA, inbound: aToB, replayWindow: 64)
        var old = rtpPacket(sequence: 1)
        try a.protectRTP(&old)
        for sequence in UInt16(2)...100 {
            var packet = rtpPacket(sequence: sequence)
            try a.protectRTP(&packet)
            #expect(b.unprotectRTP(&packet) == .ok)
        }
        #expect(b.unprotectRTP(&old) == .replayed)
    }

    @Test("Packets under the wrong key fail authentication", arguments: SRTPProfile.allCases)
    func wrongKey(profile: SRTPProfile) throws {
        let sender = try SRTPSession(
            profile: profile, outbound: try keys(profile, seed: 3), inbound: try keys(profile, seed: 4))
        let receiver = try SRTPSession(
            profile: profile, outbound: try keys(profile, seed: 4), inbound: try keys(profile, seed: 5))
        var rtp = rtpPacket(sequence: 9)
        try sender.protectRTP(&rtp)
        #expect(receiver.unprotectRTP(&rtp) == .authenticationFailed)
        var rtcp = rtcpPacket()
        try sender.protectRTCP(&rtcp)
        #expect(receiver.unprotectRTCP(&rtcp) == .authenticationFailed)
        #expect(receiver.statistics.authFailures == 2)
    }

    @Test("Short and garbage inbound packets are rejected, never accepted or crashing", arguments: SRTPProfile.allCases)
    func garbage(profile: SRTPProfile) throws {
        let (_, b) = try pair(profile)
        var generator = SplitMix64(seed: 0x5EED)
        var inputs: [[UInt8]] = (0..<64).map { [UInt8](repeating: 0x80, count: $0) }
        for length in [0, 1, 2, 11, 12, 13, 20, 31, 64, 200, 1500] {
            for _ in 0..<20 { inputs.append((0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }) }
        }
        // RTP-shaped headers whose CSRC count or extension length point past the end.
        inputs.append([0x8F, 96, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4] + [UInt8](repeating: 0, count: 20))
        inputs.append([0x90, 96, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 0xBE, 0xDE, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 20))
        for input in inputs {
            var rtp = input
            #expect(b.unprotectRTP(&rtp) != .ok)
            var rtcp = input
            #expect(b.unprotectRTCP(&rtcp) != .ok)
        }
        #expect(b.statistics.unprotected == 0)
        var empty: [UInt8] = []
        #expect(b.unprotectRTP(&empty) == .malformed)
        #expect(b.unprotectRTCP(&empty) == .malformed)
    }

    @Test("Protecting a packet too short for its header throws")
    func protectShort() throws {
        let (a, _) = try pair(.aesCM128HmacSha1_80)
        var short: [UInt8] = [0x80, 96, 0, 1]
        #expect(throws: ConduitError.self) { try a.protectRTP(&short) }
        #expect(short == [0x80, 96, 0, 1])
        var shortRTCP: [UInt8] = [0x80, 201]
        #expect(throws: ConduitError.self) { try a.protectRTCP(&shortRTCP) }
        // A CSRC count that runs past the end is refused by libsrtp, and the packet is left as it was.
        var lying: [UInt8] = [0x8F, 96, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6]
        let before = lying
        #expect(throws: ConduitError.self) { try a.protectRTP(&lying) }
        #expect(lying == before)
        #expect(a.statistics.protected == 0)
    }

    @Test("Sessions refuse keys of another profile and replay windows libsrtp does not allow")
    func badSessionConfiguration() throws {
        let cm = try keys(.aesCM128HmacSha1_80, seed: 1)
        let gcm = try keys(.aeadAES128GCM, seed: 1)
        let mismatch = #expect(throws: ConduitError.self) {
            _ = try SRTPSession(profile: .aesCM128HmacSha1_80, outbound: cm, inbound: gcm)
        }
        #expect(mismatch?.code == .invalidConfiguration)
        for window in [0, 63, 0x8000] {
            let error = #expect(throws: ConduitError.self) {
                _ = try SRTPSession(outbound: cm, inbound: cm, replayWindow: window)
            }
            #expect(error?.code == .invalidConfiguration)
        }
        let session = try SRTPSession(outbound: cm, inbound: cm)
        #expect(session.replayWindow == 1024)
        #expect(session.profile == .aesCM128HmacSha1_80)
    }
}

/// A small seeded generator, so the garbage inputs are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("SRTP outbound")
struct SRTPOutboundTests {
    @Test("Protecting the same sequence number twice throws rather than reusing keystream")
    func repeatedSequence() throws {
        let (a, _) = try pair(.aesCM128HmacSha1_80)
        var first = rtpPacket(sequence: 5)
        try a.protectRTP(&first)
        var again = rtpPacket(sequence: 5)
        let error = #expect(throws: ConduitError.self) { try a.protectRTP(&again) }
        #expect(error?.code == .protocolViolation)
        #expect(again == rtpPacket(sequence: 5))
        #expect(a.statistics.protected == 1)
    }
}

@Suite("SRTP sequence-number rollover")
struct SRTPRolloverTests {
    /// The 16-bit RTP sequence number wraps; libsrtp carries the rollover counter (RFC 3711
    /// section 3.3.1), so packets on both sides of the wrap protect and unprotect, each once.
    @Test(arguments: SRTPProfile.allCases)
    func sequenceNumbersWrapWithoutLoss(_ profile: SRTPProfile) throws {
        let (a, b) = try pair(profile)
        let sequences = Array(UInt16(65_500)...UInt16.max) + Array(UInt16(0)...UInt16(100))
        var beforeWrap: [UInt8] = []
        for sequence in sequences {
            var packet = rtpPacket(sequence: sequence)
            let plain = packet
            try a.protectRTP(&packet)
            if sequence == .max { beforeWrap = packet }
            #expect(b.unprotectRTP(&packet) == .ok, "sequence \(sequence)")
            #expect(packet == plain)
        }
        // The last packet before the wrap, replayed after it, is refused.
        #expect(b.unprotectRTP(&beforeWrap) == .replayed)
    }
}
#endif
