import ConduitCore
import ConduitUDP
import NIOCore

extension FuzzTargets {
    /// The `udp://` listener's handshake and admission, as its receive path runs them: every
    /// message through `UDPControlMessage` on the wire, cookies minted and checked by
    /// `UDPCookieJar` on a fuzzed clock, links charged to `UDPAddressLedger` under small limits.
    /// The listener itself is bound to a NIO channel and has no sans-IO machine, so this target
    /// drives the deterministic parts it is made of. A program of HELLOs from up to 32 hosts, echoed
    /// cookies, forged ones (one field or bit changed), junk, time steps and closing links must
    /// keep: an honest echo verifies exactly while the cookie is fresh, a forged one never; a
    /// host's links within its cap and counted exactly; handshakes within the rate; the table bounded.
    static let udpListener = FuzzTarget(
        name: "udp-listener",
        summary: "udp:// listener handshake and admission (control messages, cookie jar, address ledger) under a fuzzed program: cookies, caps, rate",
        run: UDPListenerRun.run
    )
}

/// One `udp-listener` program: the jar, the ledger, the cookies handed out and the links made.
struct UDPListenerRun {
    struct Issued {
        var host: Int
        var ssrc: UInt32
        var nonce: UInt64
        var mtu: UInt16
        var cookie: UDPCookie
    }

    static let limits = UDPTransport.Configuration.ListenerLimits(maxLinks: 8, maxLinksPerAddress: 3, handshakesPerSecondPerAddress: 4, maxAwaitingAccept: 8)
    let check: Invariants
    let jar = UDPCookieJar(key: (0x0123_4567_89AB_CDEF, 0x0F1E_2D3C_4B5A_6978))
    var ledger = UDPAddressLedger(limits: Self.limits)
    var now = ConduitInstant(nanoseconds: 5_000_000_000)
    var issued: [Issued] = []
    /// The host of each link, and when each host's links were admitted.
    var links: [Int] = []
    var admissions: [Int: [ConduitInstant]] = [:]
    /// When each host last asked the ledger for a link, and the most hosts that held something at
    /// once (a link, or a handshake within the last second): what bounds the ledger's table.
    var lastAttempt: [String: ConduitInstant] = [:]
    var peakLiveHosts = 0
    var operations = 0
    /// The last operation admitted or released a link (or tried to).
    var ledgerChanged = false

    init(check: Invariants) { self.check = check }

    /// Runs one input: operations as the target's summary says, at most 512.
    static func run(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) -> Bool {
        var program = ProgramReader(input)
        var run = UDPListenerRun(check: Invariants(target: "udp-listener"))
        try program.forEachOperation(limit: 512) { op, program throws(FuzzFailure) in
            run.operations += 1
            switch op % 6 {
            case 0: try run.hello(host: program.byte() ?? 0, ssrc: program.byte() ?? 0, mtu: program.byte() ?? 0)
            case 1: try run.echo(program.byte() ?? 0)
            case 2: try run.forge(program.byte() ?? 0, field: program.byte() ?? 0, xor: program.byte() ?? 0)
            case 3: try run.junk(host: program.byte() ?? 0, program.bytes(Int(program.byte() ?? 0)))
            case 4: run.now = run.now + fuzzedStep(program.byte() ?? 0)
            default: try run.closeLink(program.byte() ?? 0)
            }
            // Only admitting and releasing change the ledger: checked after each of those, not
            // after every step (that check was most of an input's time).
            if run.ledgerChanged { try run.checkLedger() }
            run.ledgerChanged = false
        }
        return true
    }

    /// The listener's clock in seconds, as its cookie jar reads it.
    var seconds: UInt32 { UInt32(truncatingIfNeeded: now.nanoseconds / 1_000_000_000) }

    /// 16 IPv4 hosts and 16 IPv6 ones, two ports each (host h and h + 32): the limits count
    /// hosts, not ports. Made per use: a static array of them (IPv6 ones hold a box) is reported
    /// by LeakSanitizer at exit.
    static func address(_ host: Int) -> SocketAddress {
        let port = 4_000 + host % 64 / 32
        return host % 32 < 16 ? try! SocketAddress(ipAddress: "127.0.0.\(host % 32 + 1)", port: port)
            : try! SocketAddress(ipAddress: "::ffff:10.0.0.\(host % 32)", port: port)
    }

    /// The ledger's key of each host, made once (strings only).
    static let hostKeys: [String] = (0..<64).map { address($0).ipAddress! }

    static func hostKey(_ host: Int) -> String { hostKeys[host % 64] }

    /// One buffer for every message of a run: a fresh ByteBuffer per message made allocation
    /// (and, under AddressSanitizer, fresh pages) a fifth of each input's time.
    final class WireScratch {
        var buffer = ByteBuffer()
    }
    let scratch = WireScratch()

    /// A message as it crosses the wire: written, then parsed back as the listener reads it.
    func onWire(_ message: UDPControlMessage) throws(FuzzFailure) -> UDPControlMessage {
        scratch.buffer.clear()
        message.write(into: &scratch.buffer)
        let parsed = UDPControlMessage(parsing: scratch.buffer)
        try check.require(parsed == message, "\(message) parses back as \(String(describing: parsed))")
        return message
    }

    mutating func hello(host: UInt8, ssrc: UInt8, mtu: UInt8) throws(FuzzFailure) {
        let mtuValue = UInt16(200 + Int(mtu) * 8)  // some below the listener's range
        let message = try onWire(.hello(ssrc: UInt32(ssrc) * 0x0101_0101, nonce: UInt64(operations), version: UDPControlMessage.protocolVersion, mtu: mtuValue))
        guard case .hello(let client, let nonce, let version, let helloMTU, _) = message, version == UDPControlMessage.protocolVersion,
              UDPTransport.Configuration.mtuRange.contains(Int(helloMTU)) else { return }
        let cookie = jar.mint(for: Self.address(Int(host)), ssrc: client, nonce: nonce, mtu: helloMTU, at: seconds)
        if issued.count == 32 { issued.removeFirst() }
        issued.append(Issued(host: Int(host), ssrc: client, nonce: nonce, mtu: helloMTU, cookie: cookie))
    }

    /// The client echoes a cookie it got: it verifies exactly while fresh, then the link is admitted or refused.
    mutating func echo(_ pick: UInt8) throws(FuzzFailure) {
        guard !issued.isEmpty else { return }
        let hello = issued[Int(pick) % issued.count]
        let fresh = seconds &- hello.cookie.time <= UDPCookieJar.lifetime
        try check.require(try verify(hello) == fresh, "an honest cookie \(fresh ? "refused while fresh" : "accepted when stale") (minted at \(hello.cookie.time) s, now \(seconds) s)")
        if fresh { try admit(hello.host) }
    }

    /// A cookie echoed with one thing changed (host, SSRC, nonce, MTU, time or tag) never verifies.
    mutating func forge(_ pick: UInt8, field: UInt8, xor: UInt8) throws(FuzzFailure) {
        guard !issued.isEmpty else { return }
        var hello = issued[Int(pick) % issued.count]
        let flip = xor | 1
        switch field % 6 {
        case 0: hello.host = (hello.host + Int(flip)) % 64
        case 1: hello.ssrc ^= UInt32(flip) << (field / 8 % 4 * 8)
        case 2: hello.nonce ^= UInt64(flip) << (field / 8 % 8 * 8)
        case 3: hello.mtu ^= UInt16(flip)
        case 4: hello.cookie.time ^= UInt32(flip)
        default: hello.cookie.tagLow ^= UInt64(flip) << (field / 8 % 8 * 8)
        }
        // Host h and h + 64 are the same address; the same host on the other port differs.
        guard Self.address(hello.host) != Self.address(issued[Int(pick) % issued.count].host) || field % 6 != 0 else { return }
        try check.require(try !verify(hello), "a forged cookie verified (field \(field % 6))")
    }

    /// Anything at the socket: if it is a HELLO with a cookie that verifies, it is admitted as the listener would.
    mutating func junk(host: UInt8, _ bytes: [UInt8]) throws(FuzzFailure) {
        guard case .helloWithCookie(let ssrc, let nonce, let version, let mtu, let cookie)? = UDPControlMessage(parsing: ByteBuffer(bytes: bytes)),
              version == UDPControlMessage.protocolVersion, UDPTransport.Configuration.mtuRange.contains(Int(mtu)),
              jar.verify(cookie, from: Self.address(Int(host)), ssrc: ssrc, nonce: nonce, mtu: mtu, at: seconds)
        else { return }
        try admit(Int(host))
    }

    func verify(_ hello: Issued) throws(FuzzFailure) -> Bool {
        let message = try onWire(.helloWithCookie(ssrc: hello.ssrc, nonce: hello.nonce, version: UDPControlMessage.protocolVersion, mtu: hello.mtu, cookie: hello.cookie))
        guard case .helloWithCookie(let ssrc, let nonce, _, let mtu, let cookie) = message else { return false }
        return jar.verify(cookie, from: Self.address(hello.host), ssrc: ssrc, nonce: nonce, mtu: mtu, at: seconds)
    }

    /// What the listener does with a verified echo: room overall, then the host's limits.
    mutating func admit(_ host: Int) throws(FuzzFailure) {
        guard links.count < Self.limits.maxLinks else { return }
        let key = Self.hostKey(host)
        // Hosts the ledger must keep: with links, or whose handshake bucket is still refilling
        // (charged less than a second ago; an attempt that was not charged only widens the set).
        var live = Set(links.map(Self.hostKey))
        for (attempted, at) in lastAttempt where now - at <= .seconds(1) { live.insert(attempted) }
        peakLiveHosts = max(peakLiveHosts, live.count)
        lastAttempt[key] = now
        ledgerChanged = true
        guard case .admitted = ledger.admit(key, now: now) else { return }
        links.append(host)
        // Only the last second's admissions matter (older ones are dropped as they age: the
        // list stayed the whole program long, and filtering it made each input quadratic).
        admissions[host % 32, default: []].removeAll { now - $0 >= .seconds(1) }
        admissions[host % 32]!.append(now)
        // A bucket of one second's worth, refilled at the rate: at most twice the rate in any second.
        let recent = admissions[host % 32]!.count
        try check.require(recent <= 2 * Self.limits.handshakesPerSecondPerAddress, "\(recent) handshakes admitted for \(key) within a second")
    }

    mutating func closeLink(_ pick: UInt8) throws(FuzzFailure) {
        guard !links.isEmpty else { return }
        let host = links.remove(at: Int(pick) % links.count)
        ledger.release(Self.hostKey(host))
        ledgerChanged = true
    }

    /// The ledger counts exactly the links each host holds, within the cap, in a table bounded by
    /// the hosts that hold something: it is swept when it doubles, keeping only those.
    func checkLedger() throws(FuzzFailure) {
        var expected: [String: Int] = [:]
        for host in links { expected[Self.hostKey(host), default: 0] += 1 }
        for (key, count) in expected {
            try check.require(count <= Self.limits.maxLinksPerAddress, "\(key) holds \(count) links, over its cap")
            try check.require(ledger.entries[key]?.links == count, "the ledger counts \(ledger.entries[key]?.links ?? 0) links for \(key), which holds \(count)")
        }
        for (key, entry) in ledger.entries where expected[key] == nil {
            try check.require(entry.links == 0, "the ledger counts \(entry.links) links for \(key), which holds none")
        }
        let bound = 2 * max(Self.limits.maxLinks, peakLiveHosts) + 1
        try check.require(ledger.entries.count <= bound, "the ledger holds \(ledger.entries.count) hosts (bound \(bound))")
    }
}
