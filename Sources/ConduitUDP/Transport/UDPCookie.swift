package import NIOCore

/// A stateless handshake cookie: the coarse time it was minted (seconds on the listener's clock)
/// and a 128-bit SipHash-2-4 tag over the client's address, SSRC, nonce, MTU and that time.
package struct UDPCookie: Hashable, Sendable {
    package var time: UInt32
    package var tagHigh: UInt64
    package var tagLow: UInt64

    package func write(into buffer: inout ByteBuffer) {
        buffer.writeInteger(time)
        buffer.writeInteger(tagHigh)
        buffer.writeInteger(tagLow)
    }

    package init(time: UInt32, tagHigh: UInt64, tagLow: UInt64) {
        self.time = time
        self.tagHigh = tagHigh
        self.tagLow = tagLow
    }

    package init?(reading buffer: inout ByteBuffer) {
        guard let time = buffer.readInteger(as: UInt32.self), let high = buffer.readInteger(as: UInt64.self),
            let low = buffer.readInteger(as: UInt64.self)
        else { return nil }
        self.init(time: time, tagHigh: high, tagLow: low)
    }
}

/// Mints and checks cookies with a per-listener random secret. Keeps no per-client state.
package struct UDPCookieJar: Sendable {
    /// How long a cookie stays valid, in seconds.
    package static let lifetime: UInt32 = 10

    private let hasher: SipHash128
    private let origin: NIODeadline

    init() {
        var random = SystemRandomNumberGenerator()
        self.init(key: (random.next(), random.next()))
    }

    /// A jar with a chosen secret (tests and the `udp-listener` fuzz target, which pass the time in seconds).
    package init(key: (UInt64, UInt64)) {
        hasher = SipHash128(key: key)
        origin = .now()
    }

    private var now: UInt32 {
        UInt32(truncatingIfNeeded: (NIODeadline.now().uptimeNanoseconds &- origin.uptimeNanoseconds) / 1_000_000_000)
    }

    func mint(for client: SocketAddress, ssrc: UInt32, nonce: UInt64, mtu: UInt16) -> UDPCookie {
        mint(for: client, ssrc: ssrc, nonce: nonce, mtu: mtu, at: now)
    }

    func verify(_ cookie: UDPCookie, from client: SocketAddress, ssrc: UInt32, nonce: UInt64, mtu: UInt16) -> Bool {
        verify(cookie, from: client, ssrc: ssrc, nonce: nonce, mtu: mtu, at: now)
    }

    /// Mints a cookie at `time`, the listener's clock in seconds.
    package func mint(for client: SocketAddress, ssrc: UInt32, nonce: UInt64, mtu: UInt16, at time: UInt32) -> UDPCookie {
        let (high, low) = tag(client, ssrc: ssrc, nonce: nonce, mtu: mtu, time: time)
        return UDPCookie(time: time, tagHigh: high, tagLow: low)
    }

    /// Whether `cookie` was minted by this jar for exactly this client, SSRC, nonce and MTU, at
    /// most ``lifetime`` seconds before `time`.
    package func verify(_ cookie: UDPCookie, from client: SocketAddress, ssrc: UInt32, nonce: UInt64, mtu: UInt16, at time: UInt32) -> Bool {
        let age = time &- cookie.time
        guard age <= Self.lifetime else { return false }
        let (high, low) = tag(client, ssrc: ssrc, nonce: nonce, mtu: mtu, time: cookie.time)
        // Not constant-time; the secret is per listener and the tag is 128 bits wide.
        return high == cookie.tagHigh && low == cookie.tagLow
    }

    private func tag(_ client: SocketAddress, ssrc: UInt32, nonce: UInt64, mtu: UInt16, time: UInt32) -> (UInt64, UInt64) {
        var message = Array((client.ipAddress ?? "").utf8)
        message.append(0)
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.bigEndian) { message.append(contentsOf: $0) }
        }
        append(UInt16(truncatingIfNeeded: client.port ?? 0))
        append(ssrc)
        append(nonce)
        append(mtu)
        append(time)
        return hasher.hash(message)
    }
}
