#if SRTP
public import ConduitCore

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The master key and master salt of one direction of an SRTP session, checked against the
/// lengths its profile needs.
///
/// Its `description` never shows the secret bytes.
public struct SRTPKeyMaterial: Hashable, Sendable, CustomStringConvertible {
    /// The profile the lengths were checked against.
    public let profile: SRTPProfile
    /// The master key: 16 bytes for the profiles here.
    public let masterKey: [UInt8]
    /// The master salt: 14 bytes for AES-CM, 12 for GCM.
    public let masterSalt: [UInt8]

    /// Makes key material, checking the lengths `profile` needs. Throws `invalidConfiguration` on a wrong length.
    public init(profile: SRTPProfile, masterKey: [UInt8], masterSalt: [UInt8]) throws(ConduitError) {
        guard masterKey.count == profile.masterKeyLength else {
            throw ConduitError(
                .invalidConfiguration,
                "an SRTP master key for \(profile) is \(profile.masterKeyLength) bytes, not \(masterKey.count)"
            )
        }
        guard masterSalt.count == profile.masterSaltLength else {
            throw ConduitError(
                .invalidConfiguration,
                "an SRTP master salt for \(profile) is \(profile.masterSaltLength) bytes, not \(masterSalt.count)"
            )
        }
        self.profile = profile
        self.masterKey = masterKey
        self.masterSalt = masterSalt
    }

    /// Key followed by salt, as SDES and libsrtp lay them out.
    public init(profile: SRTPProfile, keyAndSalt: [UInt8]) throws(ConduitError) {
        guard keyAndSalt.count == profile.keyMaterialLength else {
            throw ConduitError(
                .invalidConfiguration,
                "SRTP key material for \(profile) is \(profile.keyMaterialLength) bytes "
                    + "(\(profile.masterKeyLength) key + \(profile.masterSaltLength) salt), not \(keyAndSalt.count)"
            )
        }
        try self.init(
            profile: profile,
            masterKey: Array(keyAndSalt.prefix(profile.masterKeyLength)),
            masterSalt: Array(keyAndSalt.dropFirst(profile.masterKeyLength))
        )
    }

    /// SDES inline style (RFC 4568 section 6.1): base64 of key||salt. An `inline:` prefix and a
    /// `|2^31` lifetime after the key are accepted; an MKI (`|1:4`) is not supported. Whitespace
    /// around the text is ignored.
    public init(profile: SRTPProfile, base64 text: String) throws(ConduitError) {
        var body = Substring(text).trimmingWhitespace()
        if body.lowercased().hasPrefix("inline:") { body = body.dropFirst("inline:".count) }
        let parts = body.split(separator: "|", omittingEmptySubsequences: false)
        if parts.count > 1, parts.dropFirst().contains(where: { $0.contains(":") }) {
            throw ConduitError(.invalidConfiguration, "SRTP key parameters with an MKI are not supported")
        }
        guard parts.count <= 2, let encoded = parts.first, let bytes = Base64.decode(encoded) else {
            throw ConduitError(.invalidConfiguration, "the SRTP key is not valid base64 (RFC 4648, padded)")
        }
        try self.init(profile: profile, keyAndSalt: bytes)
    }

    /// The base64 text (as ``init(profile:base64:)`` takes) in the file at `path`.
    public init(profile: SRTPProfile, contentsOfFile path: String) throws(ConduitError) {
        try self.init(profile: profile, base64: try Self.readSmallTextFile(path))
    }

    /// Base64 of key||salt, the SDES inline key.
    public var base64: String { Base64.encode(masterKey + masterSalt) }

    public var description: String { "SRTPKeyMaterial(\(profile), <redacted>)" }

    /// Key files hold one line of base64; anything past 4 KiB is not one.
    private static let maximumFileSize = 4096

    /// The text of a key file (at most 4 KiB), for callers that keep more than one key in it.
    public static func readSmallTextFile(_ path: String) throws(ConduitError) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            throw ConduitError(.invalidConfiguration, "cannot open the SRTP key file \(path) (errno \(errno))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ConduitError(.invalidConfiguration, "cannot read the SRTP key file \(path) (errno \(errno))")
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk.prefix(count))
            guard bytes.count <= maximumFileSize else {
                throw ConduitError(.invalidConfiguration, "the SRTP key file \(path) is larger than a key")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var trimmed = self
        while let first = trimmed.first, first.isWhitespace { trimmed.removeFirst() }
        while let last = trimmed.last, last.isWhitespace { trimmed.removeLast() }
        return trimmed
    }
}
#endif
