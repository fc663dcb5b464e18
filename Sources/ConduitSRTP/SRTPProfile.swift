#if SRTP
/// An SRTP protection profile: the cipher and authentication of both SRTP and SRTCP.
public enum SRTPProfile: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// AES-128 in counter mode, HMAC-SHA1 truncated to 80 bits (RFC 3711; the default).
    case aesCM128HmacSha1_80 = "aes-cm-128-hmac-sha1-80"
    /// AES-128 in counter mode, HMAC-SHA1 truncated to 32 bits on SRTP (80 on SRTCP, RFC 5764).
    case aesCM128HmacSha1_32 = "aes-cm-128-hmac-sha1-32"
    /// AEAD_AES_128_GCM with a 16-octet tag (RFC 7714).
    case aeadAES128GCM = "aead-aes-128-gcm"

    /// The profile used when a key is given without `srtp=`: AES-CM-128 with HMAC-SHA1-80.
    public static let `default`: SRTPProfile = .aesCM128HmacSha1_80

    /// The profile named `name` (`aes-cm-128-hmac-sha1-80`, `aes-cm-128-hmac-sha1-32`,
    /// `aead-aes-128-gcm`; case-insensitive), or nil.
    public init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    /// The profile's name in the URL's `srtp=` option.
    public var name: String { rawValue }
    public var description: String { rawValue }

    /// Octets of master key.
    public var masterKeyLength: Int { 16 }

    /// Octets of master salt: 14 for AES-CM (RFC 3711 section 8.2), 12 for GCM (RFC 7714 section 12).
    public var masterSaltLength: Int {
        switch self {
        case .aesCM128HmacSha1_80, .aesCM128HmacSha1_32: 14
        case .aeadAES128GCM: 12
        }
    }

    /// Octets of key followed by salt, as SDES carries them (RFC 4568 section 6.1).
    public var keyMaterialLength: Int { masterKeyLength + masterSaltLength }
}
#endif
