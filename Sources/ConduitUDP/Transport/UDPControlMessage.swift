package import NIOCore

/// The handshake and close messages: RTCP APP packets (RFC 3550 section 6.7, PT=204) named
/// `CNDT`, one subtype per message, and RTCP BYE (PT=203) with one SSRC. One RTCP packet per
/// datagram. Sizes are chosen so that the listener never answers with more bytes than it got
/// (HELLO is padded to the size of COOKIE).
package enum UDPControlMessage: Hashable, Sendable {
    /// client → server. SSRC = client SSRC.
    /// `srtpProfile`: the client's SRTP profile (0 none, 1 AES_CM_128_HMAC_SHA1_80,
    /// 2 AES_CM_128_HMAC_SHA1_32, 3 AEAD_AES_128_GCM), in the first padding byte: two profiles
    /// can share the SRTCP transform, so the listener must compare them to refuse a mismatch.
    case hello(ssrc: UInt32, nonce: UInt64, version: UInt16, mtu: UInt16, srtpProfile: UInt8 = 0)
    /// server → client. SSRC = the listener's SSRC; echoes the nonce.
    case cookie(ssrc: UInt32, nonce: UInt64, cookie: UDPCookie)
    /// client → server. SSRC = client SSRC; echoes the cookie.
    case helloWithCookie(ssrc: UInt32, nonce: UInt64, version: UInt16, mtu: UInt16, cookie: UDPCookie)
    /// server → client. SSRC = the server link's SSRC; echoes client SSRC and nonce; the agreed MTU.
    case accept(ssrc: UInt32, clientSSRC: UInt32, nonce: UInt64, mtu: UInt16)
    /// either side: the link is closed.
    case bye(ssrc: UInt32)
    /// Listener → client, always in the clear: the listener could not authenticate a handshake
    /// packet from `clientSSRC` with SRTP (keys or profile differ, or only one side uses SRTP).
    /// It tells the client at once rather than leaving it to time out; it carries nothing secret.
    /// `reason`: 1 the packet failed SRTP authentication, 2 the SRTP profiles differ.
    case reject(ssrc: UInt32, clientSSRC: UInt32, reason: UInt8)
    /// Listener → a new client address, PATH-CHALLENGE (RFC 9000 §8.2.1): may this link move
    /// here? SSRC = the server link's; names the client SSRC; `challenge` is unpredictable.
    case pathChallenge(ssrc: UInt32, clientSSRC: UInt32, challenge: UInt64)
    /// Client → listener, PATH-RESPONSE (RFC 9000 §8.2.2): echoes a challenge, from the address
    /// it reached. SSRC = the client's; names the server link's SSRC.
    case pathResponse(ssrc: UInt32, serverSSRC: UInt32, challenge: UInt64)

    package static let protocolVersion: UInt16 = 1
    static let appPayloadType: UInt8 = 204
    static let byePayloadType: UInt8 = 203
    static let name: UInt32 = 0x434E_4454  // "CNDT"

    enum Subtype: UInt8 {
        case hello = 1, cookie = 2, helloWithCookie = 3, accept = 4, reject = 5, pathChallenge = 6, pathResponse = 7
    }

    /// Bytes of application-dependent data per subtype (a multiple of 4).
    static func dataSize(_ subtype: Subtype) -> Int {
        switch subtype {
        case .hello: 28  // nonce 8, version 2, mtu 2, zero padding 16
        case .cookie: 28  // nonce 8, cookie time 4, cookie 16
        case .helloWithCookie: 32  // nonce 8, version 2, mtu 2, cookie time 4, cookie 16
        case .accept: 16  // client SSRC 4, nonce 8, mtu 2, reserved 2
        case .reject: 8  // client SSRC 4, reason 1, reserved 3
        case .pathChallenge, .pathResponse: 16  // the other end's SSRC 4, challenge 8, reserved 4
        }
    }

    package func write(into buffer: inout ByteBuffer) {
        switch self {
        case .bye(let ssrc):
            buffer.writeInteger(UInt8(0x81))  // V=2, P=0, SC=1
            buffer.writeInteger(Self.byePayloadType)
            buffer.writeInteger(UInt16(1))  // length in words - 1
            buffer.writeInteger(ssrc)
        case .hello(let ssrc, let nonce, let version, let mtu, let srtpProfile):
            Self.writeAppHeader(.hello, ssrc: ssrc, into: &buffer)
            buffer.writeInteger(nonce)
            buffer.writeInteger(version)
            buffer.writeInteger(mtu)
            buffer.writeInteger(srtpProfile)
            buffer.writeRepeatingByte(0, count: 15)
        case .cookie(let ssrc, let nonce, let cookie):
            Self.writeAppHeader(.cookie, ssrc: ssrc, into: &buffer)
            buffer.writeInteger(nonce)
            cookie.write(into: &buffer)
        case .helloWithCookie(let ssrc, let nonce, let version, let mtu, let cookie):
            Self.writeAppHeader(.helloWithCookie, ssrc: ssrc, into: &buffer)
            buffer.writeInteger(nonce)
            buffer.writeInteger(version)
            buffer.writeInteger(mtu)
            cookie.write(into: &buffer)
        case .accept(let ssrc, let clientSSRC, let nonce, let mtu):
            Self.writeAppHeader(.accept, ssrc: ssrc, into: &buffer)
            buffer.writeInteger(clientSSRC)
            buffer.writeInteger(nonce)
            buffer.writeInteger(mtu)
            buffer.writeInteger(UInt16(0))
        case .reject(let ssrc, let clientSSRC, let reason):
            Self.writeAppHeader(.reject, ssrc: ssrc, into: &buffer)
            buffer.writeInteger(clientSSRC)
            buffer.writeInteger(reason)
            buffer.writeRepeatingByte(0, count: 3)
        case .pathChallenge(let ssrc, let other, let challenge):
            Self.writePath(.pathChallenge, ssrc: ssrc, other: other, challenge: challenge, into: &buffer)
        case .pathResponse(let ssrc, let other, let challenge):
            Self.writePath(.pathResponse, ssrc: ssrc, other: other, challenge: challenge, into: &buffer)
        }
    }

    private static func writePath(_ subtype: Subtype, ssrc: UInt32, other: UInt32, challenge: UInt64, into buffer: inout ByteBuffer) {
        writeAppHeader(subtype, ssrc: ssrc, into: &buffer)
        buffer.writeInteger(other)
        buffer.writeInteger(challenge)
        buffer.writeInteger(UInt32(0))
    }

    private static func writeAppHeader(_ subtype: Subtype, ssrc: UInt32, into buffer: inout ByteBuffer) {
        let total = 12 + dataSize(subtype)
        buffer.writeInteger(0x80 | subtype.rawValue)  // V=2, P=0, subtype
        buffer.writeInteger(appPayloadType)
        buffer.writeInteger(UInt16(total / 4 - 1))
        buffer.writeInteger(ssrc)
        buffer.writeInteger(name)
    }

    /// The message in `buffer`, or nil if it is not exactly one of ours (wrong version, padding,
    /// type, name, subtype, length field or datagram length, or non-zero reserved bytes).
    package init?(parsing buffer: ByteBuffer) {
        var b = buffer
        guard let first = b.readInteger(as: UInt8.self), first >> 6 == 2, first & 0x20 == 0,
            let type = b.readInteger(as: UInt8.self),
            let length = b.readInteger(as: UInt16.self),
            (Int(length) + 1) * 4 == buffer.readableBytes,
            let ssrc = b.readInteger(as: UInt32.self)
        else { return nil }
        if type == Self.byePayloadType {
            guard first & 0x1F == 1, length == 1 else { return nil }
            self = .bye(ssrc: ssrc)
            return
        }
        guard type == Self.appPayloadType, let subtype = Subtype(rawValue: first & 0x1F),
            b.readInteger(as: UInt32.self) == Self.name, b.readableBytes == Self.dataSize(subtype),
            let nonce = [.accept, .reject, .pathChallenge, .pathResponse].contains(subtype) ? 0 : b.readInteger(as: UInt64.self)
        else { return nil }
        switch subtype {
        case .hello:
            guard let version = b.readInteger(as: UInt16.self), let mtu = b.readInteger(as: UInt16.self),
                let srtpProfile = b.readInteger(as: UInt8.self), b.readableBytesView.allSatisfy({ $0 == 0 })
            else { return nil }
            self = .hello(ssrc: ssrc, nonce: nonce, version: version, mtu: mtu, srtpProfile: srtpProfile)
        case .cookie:
            guard let cookie = UDPCookie(reading: &b) else { return nil }
            self = .cookie(ssrc: ssrc, nonce: nonce, cookie: cookie)
        case .helloWithCookie:
            guard let version = b.readInteger(as: UInt16.self), let mtu = b.readInteger(as: UInt16.self),
                let cookie = UDPCookie(reading: &b)
            else { return nil }
            self = .helloWithCookie(ssrc: ssrc, nonce: nonce, version: version, mtu: mtu, cookie: cookie)
        case .accept:
            guard let clientSSRC = b.readInteger(as: UInt32.self), let nonce = b.readInteger(as: UInt64.self),
                let mtu = b.readInteger(as: UInt16.self), b.readInteger(as: UInt16.self) == 0
            else { return nil }
            self = .accept(ssrc: ssrc, clientSSRC: clientSSRC, nonce: nonce, mtu: mtu)
        case .reject:
            guard let clientSSRC = b.readInteger(as: UInt32.self), let reason = b.readInteger(as: UInt8.self),
                b.readableBytesView.allSatisfy({ $0 == 0 })
            else { return nil }
            self = .reject(ssrc: ssrc, clientSSRC: clientSSRC, reason: reason)
        case .pathChallenge, .pathResponse:
            guard let other = b.readInteger(as: UInt32.self), let challenge = b.readInteger(as: UInt64.self),
                b.readInteger(as: UInt32.self) == 0
            else { return nil }
            self = subtype == .pathChallenge
                ? .pathChallenge(ssrc: ssrc, clientSSRC: other, challenge: challenge)
                : .pathResponse(ssrc: ssrc, serverSSRC: other, challenge: challenge)
        }
    }
}
