#if SRTP
import ConduitCore
import ConduitSRTP
import Foundation
import NIOCore

/// SRTP on a UDP link (`udp://…?srtp=PROFILE&srtp-key-file=PATH` or `&srtp-key-env=VARIABLE`).
///
/// Keys are exchanged out of band, as with SDES (RFC 4568): both sides hold the same master key
/// and salt per direction. The key text is one or two SDES inline keys (base64 of key‖salt),
/// separated by white space: the first protects what the client sends, the second what the
/// listener sends (one key alone serves both directions; the two ends' SSRCs differ, so their
/// keystreams do too). Keys never appear in the URL itself, so they never reach a command line.
struct UDPSRTPConfiguration: Sendable {
    let profile: SRTPProfile
    let clientToServer: SRTPKeyMaterial
    let serverToClient: SRTPKeyMaterial

    static let optionKeys = ["srtp", "srtp-key-file", "srtp-key-env"]

    /// nil when the URL asks for no SRTP.
    init?(url: TransportURL, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConduitError) {
        let file = url.query["srtp-key-file"]
        let variable = url.query["srtp-key-env"]
        guard url.query["srtp"] != nil || file != nil || variable != nil else { return nil }
        let profileName = url.query["srtp"] ?? SRTPProfile.default.name
        guard let profile = SRTPProfile(name: profileName) else {
            throw ConduitError(
                .invalidConfiguration,
                "srtp=\(profileName) is not a profile (known: \(SRTPProfile.allCases.map(\.name).joined(separator: ", ")))"
            )
        }
        let text: String
        switch (file, variable) {
        case (let path?, nil):
            text = try SRTPKeyMaterial.readSmallTextFile(path)
        case (nil, let name?):
            guard let value = environment[name] else {
                throw ConduitError(.invalidConfiguration, "srtp-key-env=\(name): the environment has no \(name)")
            }
            text = value
        case (nil, nil):
            throw ConduitError(.invalidConfiguration, "srtp=\(profileName) needs its keys: srtp-key-file=PATH or srtp-key-env=VARIABLE")
        case (_?, _?):
            throw ConduitError(.invalidConfiguration, "give the SRTP keys once: srtp-key-file or srtp-key-env, not both")
        }
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
