#if SRTP
public import ConduitCore
import CSRTP

/// What ``SRTPSession`` made of an inbound packet.
public enum SRTPVerdict: Hashable, Sendable {
    /// Authentic and new: the packet now holds the plaintext.
    case ok
    /// The tag did not verify (a forgery, corruption, or the wrong key).
    case authenticationFailed
    /// Authentic-looking but already received, or older than the replay window.
    case replayed
    /// Not a packet libsrtp could process (too short, a bad header, ...).
    case malformed
}

/// Packets through an ``SRTPSession``. `protected` and `unprotected` count successes (RTP and
/// RTCP together); the others count the inbound packets rejected for each reason.
public struct SRTPStatistics: Hashable, Sendable {
    /// Packets protected for sending (SRTP and SRTCP).
    public var protected: UInt64 = 0
    /// Packets received that authenticated and were not replays.
    public var unprotected: UInt64 = 0
    /// Packets received that failed authentication (forged, corrupted, or other keys).
    public var authFailures: UInt64 = 0
    /// Packets received again within the replay window.
    public var replays: UInt64 = 0
    /// Packets received too short or otherwise unreadable.
    public var malformed: UInt64 = 0

    /// All counters at zero.
    public init() {}
}

/// `srtp_init` runs once per process, on first use (a static let's initialiser is run exactly once,
/// thread-safely); its status is kept for every later session to check.
private enum LibSRTP {
    static let initStatus: UInt32 = srtp_init().rawValue
}

/// SRTP (RFC 3711) and SRTCP protection for one media session, on libsrtp2.
///
/// Two libsrtp contexts: the outbound one protects whatever SSRC we send with (`ssrc_any_outbound`)
/// and the inbound one accepts any SSRC the peer sends with (`ssrc_any_inbound`); libsrtp allows one
/// wildcard per context, so the directions need one each. Each direction has its own keys.
///
/// Not `Sendable`: libsrtp contexts are not thread-safe, so a session belongs to one event loop
/// (or one task) which does all its protecting and unprotecting.
public final class SRTPSession {
    /// The replay window's default size, in packets.
    public static let defaultReplayWindow = 1024
    /// libsrtp's bounds on `window_size`.
    public static let replayWindowRange = 64...0x7FFF

    /// The protection profile of both directions.
    public let profile: SRTPProfile
    /// The replay window, in packets: how far back a late packet is still accepted once.
    public let replayWindow: Int
    /// What this session protected and rejected so far.
    public private(set) var statistics = SRTPStatistics()

    private let outbound: srtp_t
    private let inbound: srtp_t
    /// Octets libsrtp may append when protecting (`SRTP_MAX_TRAILER_LEN`).
    private let trailerCapacity = Int(conduit_srtp_max_trailer_len())

    /// Makes a session with one libsrtp context per direction. Throws `invalidConfiguration` if
    /// libsrtp refuses the keys or the window.
    /// - Parameters:
    ///   - profile: the protection profile of both directions.
    ///   - outbound: the keys we protect with (the peer's inbound keys).
    ///   - inbound: the keys the peer protects with (the peer's outbound keys).
    ///   - replayWindow: packets of libsrtp's replay window (`window_size`, 64 to 32767).
    public init(
        profile: SRTPProfile = .default,
        outbound: SRTPKeyMaterial,
        inbound: SRTPKeyMaterial,
        replayWindow: Int = SRTPSession.defaultReplayWindow
    ) throws(ConduitError) {
        guard outbound.profile == profile, inbound.profile == profile else {
            throw ConduitError(
                .invalidConfiguration,
                "the SRTP keys are for \(outbound.profile) and \(inbound.profile), the session is \(profile)"
            )
        }
        guard Self.replayWindowRange.contains(replayWindow) else {
            throw ConduitError(
                .invalidConfiguration,
                "the SRTP replay window is \(replayWindow) packets, libsrtp allows \(Self.replayWindowRange)"
            )
        }
        guard LibSRTP.initStatus == srtp_err_status_ok.rawValue else {
            throw ConduitError(.invalidConfiguration, "srtp_init failed (libsrtp status \(LibSRTP.initStatus))")
        }
        let outboundContext = try Self.makeContext(
            profile: profile, keys: outbound, direction: ssrc_any_outbound, replayWindow: replayWindow)
        let inboundContext: srtp_t
        do {
            inboundContext = try Self.makeContext(
                profile: profile, keys: inbound, direction: ssrc_any_inbound, replayWindow: replayWindow)
        } catch {
            srtp_dealloc(outboundContext)
            throw error
        }
        self.profile = profile
        self.replayWindow = replayWindow
        self.outbound = outboundContext
        self.inbound = inboundContext
    }

    deinit {
        srtp_dealloc(outbound)
        srtp_dealloc(inbound)
    }

    private static func makeContext(
        profile: SRTPProfile,
        keys: SRTPKeyMaterial,
        direction: srtp_ssrc_type_t,
        replayWindow: Int
    ) throws(ConduitError) -> srtp_t {
        var policy = srtp_policy_t()
        switch profile {
        case .aesCM128HmacSha1_80:
            // The default policies are AES_CM_128_HMAC_SHA1_80 (the header's named setter is a macro).
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aesCM128HmacSha1_32:
            // RFC 5764 section 4.1.2: SRTCP keeps the 80-bit tag.
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        }
        policy.ssrc.type = direction
        policy.ssrc.value = 0
        policy.window_size = UInt(replayWindow)
        policy.allow_repeat_tx = 0
        policy.next = nil

        var keyAndSalt = keys.masterKey + keys.masterSalt
        var session: srtp_t? = nil
        // libsrtp copies the key into the session's key schedule during srtp_create.
        let status = keyAndSalt.withUnsafeMutableBufferPointer { key in
            policy.key = key.baseAddress
            return srtp_create(&session, &policy)
        }
        // Not left lying around in freed memory longer than needed.
        for index in keyAndSalt.indices { keyAndSalt[index] = 0 }
        guard status == srtp_err_status_ok, let session else {
            throw ConduitError(
                .invalidConfiguration,
                "srtp_create failed for \(profile) (libsrtp status \(status.rawValue))"
            )
        }
        return session
    }

    // MARK: Outbound

    /// Encrypts and authenticates the RTP packet in place, appending the tag. Each packet of an SSRC
    /// needs a fresh sequence number: protecting one libsrtp has already protected throws (reusing
    /// a packet index would reuse keystream).
    public func protectRTP(_ packet: inout [UInt8]) throws(ConduitError) {
        try protect(&packet, minimumLength: 12, kind: "RTP") { srtp_protect(outbound, $0, $1) }
    }

    /// Encrypts and authenticates the RTCP compound packet in place, appending the SRTCP index and tag.
    public func protectRTCP(_ packet: inout [UInt8]) throws(ConduitError) {
        try protect(&packet, minimumLength: 8, kind: "RTCP") { srtp_protect_rtcp(outbound, $0, $1) }
    }

    private func protect(
        _ packet: inout [UInt8],
        minimumLength: Int,
        kind: String,
        _ call: (UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t
    ) throws(ConduitError) {
        let plaintextLength = packet.count
        guard plaintextLength >= minimumLength else {
            throw ConduitError(
                .protocolViolation, "an \(kind) packet is at least \(minimumLength) bytes, not \(plaintextLength)")
        }
        guard plaintextLength <= Int(Int32.max) - trailerCapacity else {
            throw ConduitError(.messageTooLarge, "an \(kind) packet of \(plaintextLength) bytes is too large")
        }
        packet.append(contentsOf: repeatElement(0, count: trailerCapacity))
        var length = Int32(plaintextLength)
        let status = packet.withUnsafeMutableBytes { bytes in call(bytes.baseAddress!, &length) }
        guard status == srtp_err_status_ok, Int(length) >= plaintextLength, Int(length) <= packet.count else {
            packet.removeLast(packet.count - plaintextLength)
            throw ConduitError(
                .protocolViolation, "libsrtp could not protect the \(kind) packet (status \(status.rawValue))")
        }
        packet.removeLast(packet.count - Int(length))
        statistics.protected &+= 1
    }

    // MARK: Inbound

    /// Verifies and decrypts the SRTP packet in place. On `.ok` the packet is the RTP plaintext;
    /// otherwise its bytes are unspecified (libsrtp may have begun decrypting an AEAD packet).
    public func unprotectRTP(_ packet: inout [UInt8]) -> SRTPVerdict {
        unprotect(&packet, minimumLength: 12) { srtp_unprotect(inbound, $0, $1) }
    }

    /// Verifies and decrypts the SRTCP packet in place. On `.ok` the packet is the RTCP plaintext;
    /// otherwise its bytes are unspecified.
    public func unprotectRTCP(_ packet: inout [UInt8]) -> SRTPVerdict {
        // Header, then the E flag and SRTCP index; the tag is checked by libsrtp.
        unprotect(&packet, minimumLength: 8 + 4) { srtp_unprotect_rtcp(inbound, $0, $1) }
    }

    private func unprotect(
        _ packet: inout [UInt8],
        minimumLength: Int,
        _ call: (UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t
    ) -> SRTPVerdict {
        let verdict = verify(&packet, minimumLength: minimumLength, call)
        switch verdict {
        case .ok: statistics.unprotected &+= 1
        case .authenticationFailed: statistics.authFailures &+= 1
        case .replayed: statistics.replays &+= 1
        case .malformed: statistics.malformed &+= 1
        }
        return verdict
    }

    private func verify(
        _ packet: inout [UInt8],
        minimumLength: Int,
        _ call: (UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t
    ) -> SRTPVerdict {
        let protectedLength = packet.count
        guard protectedLength >= minimumLength, protectedLength <= Int(Int32.max) else { return .malformed }
        var length = Int32(protectedLength)
        let status = packet.withUnsafeMutableBytes { bytes in call(bytes.baseAddress!, &length) }
        switch status {
        case srtp_err_status_ok:
            guard length >= 0, Int(length) <= protectedLength else { return .malformed }
            packet.removeLast(protectedLength - Int(length))
            return .ok
        case srtp_err_status_auth_fail:
            return .authenticationFailed
        case srtp_err_status_replay_fail, srtp_err_status_replay_old:
            return .replayed
        default:
            return .malformed
        }
    }
}
#endif
