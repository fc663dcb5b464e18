#if SRTP
import ConduitCore
import ConduitSRTP
import NIOCore

/// SRTP on a UDP link, ready to make filters: the profile and both directions' keys, parsed
/// from ``UDPTransport/Configuration/SRTP`` and the key text the app passed in (or its key reader
/// found). Keys never appear in a URL itself, so they never reach a command line.
struct UDPSRTPConfiguration: Sendable {
    let profile: SRTPProfile
    let clientToServer: SRTPKeyMaterial
    let serverToClient: SRTPKeyMaterial

    /// `keyText` is asked for once the profile is known (a build without SRTP never asks).
    init(_ settings: UDPTransport.Configuration.SRTP, keyText: () throws(ConduitError) -> String) throws(ConduitError) {
        guard let profile = SRTPProfile(name: settings.profile) else {
            throw ConduitError(
                .invalidConfiguration,
                "option srtp=\(settings.profile) is not a profile (known: \(SRTPProfile.allCases.map(\.name).joined(separator: ", ")))"
            )
        }
        let text = try keyText()
        let keys = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" })
        guard (1...2).contains(keys.count) else {
            throw ConduitError(.invalidConfiguration, "the SRTP key text holds \(keys.count) keys; one or two (client to listener, then listener to client)")
        }
        self.profile = profile
        clientToServer = try SRTPKeyMaterial(profile: profile, base64: String(keys[0]))
        serverToClient = try SRTPKeyMaterial(profile: profile, base64: String(keys.count == 2 ? keys[1] : keys[0]))
    }

    /// The filter for one end's socket: it protects with its own direction's key.
    func makeFilter(isClient: Bool) throws(ConduitError) -> UDPSRTPFilter {
        UDPSRTPFilter(session: try SRTPSession(
            profile: profile,
            outbound: isClient ? clientToServer : serverToClient,
            inbound: isClient ? serverToClient : clientToServer
        ))
    }
}

extension SRTPProfile {
    /// The profile's code in HELLO (0 is no SRTP).
    var wireCode: UInt8 {
        switch self {
        case .aesCM128HmacSha1_80: 1
        case .aesCM128HmacSha1_32: 2
        case .aeadAES128GCM: 3
        }
    }
}

/// Protects what one socket sends and unprotects what it receives: RTP as SRTP, RTCP as SRTCP
/// (told apart by the payload type, RFC 5761 section 4). Confined to the socket's event loop.
final class UDPSRTPFilter {
    let session: SRTPSession
    var wireCode: UInt8 { session.profile.wireCode }

    init(session: SRTPSession) { self.session = session }

    static func isRTCP(_ buffer: ByteBuffer) -> Bool {
        guard let type = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self) else { return false }
        return (192...223).contains(type)
    }

    /// The protected datagram, or nil if libsrtp refused (a repeated index, say): then it is not sent.
    func protect(_ buffer: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer? {
        var bytes = Array(buffer.readableBytesView)
        do {
            if Self.isRTCP(buffer) { try session.protectRTCP(&bytes) } else { try session.protectRTP(&bytes) }
        } catch {
            return nil
        }
        var out = allocator.buffer(capacity: bytes.count)
        out.writeBytes(bytes)
        return out
    }

    /// The plain datagram, or the verdict that drops it.
    func unprotect(_ buffer: ByteBuffer) -> Result<ByteBuffer, UDPSRTPRejection> {
        var bytes = Array(buffer.readableBytesView)
        let verdict = Self.isRTCP(buffer) ? session.unprotectRTCP(&bytes) : session.unprotectRTP(&bytes)
        guard verdict == .ok else { return .failure(UDPSRTPRejection(verdict: verdict)) }
        return .success(ByteBuffer(bytes: bytes))
    }
}

extension UDPControlMessage {
    /// The message as it goes on the wire: SRTCP-protected when `srtp` is on, nil if refused.
    func datagram(sealedWith srtp: NIOLoopBoundBox<UDPSRTPFilter>?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        var buffer = allocator.buffer(capacity: 48)
        write(into: &buffer)
        guard let srtp else { return buffer }
        return srtp.value.protect(buffer, allocator: allocator)
    }
}

struct UDPSRTPRejection: Error {
    let verdict: SRTPVerdict
}
#endif
