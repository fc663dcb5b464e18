import ConduitARQ
package import ConduitCore
import ConduitRooms
import ConduitUDP
import Foundation

#if canImport(Glibc)
import Glibc

/// A join storm against a relay's `udp://` listener, as an attacker would send it: each attempt a
/// real new link (a source port of its own, the cookie handshake to the end), then a join with a
/// bad token in the reliability engine's packet, then BYE once the refusal came. The datagrams
/// are crafted with the package's own encoders (`UDPControlMessage`, `RTPHeader`, `ARQEngine`,
/// `RoomControlFrame`) and sent from a pool of raw non-blocking sockets by one thread, so the
/// generator reaches thousands of attempts a second where a full client connect reaches hundreds.
///
/// What it counts is what it saw: the achieved rate, handshakes answered, refusals by reason,
/// attempts that got no answer in time.
package enum JoinStorm {
    /// What to send, how fast, for how long.
    package struct Options: Sendable {
        /// The relay's listener (an IPv4 address: the storm's sockets are IPv4).
        package var host = "127.0.0.1"
        package var port: Int
        /// Attempts started per second (each one a new HELLO from a free socket).
        package var attemptsPerSecond = 5_000
        package var duration: Duration = .seconds(30)
        /// Sockets (source ports) in the pool; an attempt holds one until it ends, so this bounds
        /// attempts in flight.
        package var sockets = 2_048
        /// How long an attempt waits for each answer (COOKIE, ACCEPT, the refusal) before it is
        /// given up (counted) and its socket says BYE. Short, as an attacker's would be: with
        /// `sockets` it bounds the rate (2,048 sockets / 250 ms: 8,192 attempts/s at most).
        package var answerTimeout: Duration = .milliseconds(250)
        package var room: RoomID = "room"
        /// The token every join carries (a bad one by default).
        package var token = Array("ct1.bad.token".utf8)
        /// Junk datagrams (random bytes, 1 to 300 of them) sent beside the attempts, spread
        /// evenly over `duration`, from a socket of their own.
        package var junkDatagrams = 0
        /// Whether the storm thread runs only on CPU time no other thread wants (Linux's
        /// `SCHED_IDLE`, this thread only): where the storm shares a machine with the relay it
        /// measures, the attackers' CPU is then not taken from the relay and its members, as it
        /// would not be were the attackers elsewhere.
        package var yieldsCPU = false

        package init(port: Int) { self.port = port }
    }

    /// What the storm saw.
    package struct Report: Sendable, Hashable, Codable {
        /// HELLOs that started an attempt.
        package var attempts = 0
        /// COOKIEs, ACCEPTs (links established at the listener) and joins sent.
        package var cookies = 0, accepts = 0, joinsSent = 0
        /// Refusals read from the relay, by reason (`RelayRefusal.description`).
        package var refusals: [String: Int] = [:]
        /// Attempts given up for want of an answer: no COOKIE, no ACCEPT, no refusal in time.
        package var noCookie = 0, noAccept = 0, noRefusal = 0
        /// Attempts whose link the relay closed (BYE) before any refusal reached us.
        package var closedByRelay = 0
        /// Attempts that were due while every socket was busy (the pool bounded the rate).
        package var deferred = 0
        /// Junk datagrams sent (the socket's buffer may have dropped some; nothing answers them).
        package var junkSent = 0
        /// How long the storm sent, in seconds.
        package var seconds = 0.0

        /// Attempts started per second of the storm.
        package var attemptsPerSecond: Double { seconds > 0 ? Double(attempts) / seconds : 0 }
        /// Every refusal read, whatever its reason.
        package var refused: Int { refusals.values.reduce(0, +) }

        /// One line for logs and the bench: the rate and every counter.
        package var summary: String {
            let reasons = refusals.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "\(attempts) attempts in \(String(format: "%.1f", seconds)) s (\(Int(attemptsPerSecond))/s): "
                + "\(cookies) cookies, \(accepts) links, \(joinsSent) joins sent, \(refused) refused [\(reasons)]; "
                + "no answer: \(noCookie) cookie, \(noAccept) accept, \(noRefusal) refusal; \(closedByRelay) closed by the relay; \(deferred) deferred (pool busy); \(junkSent) junk datagrams"
        }
    }

    /// Moves the calling thread to `SCHED_IDLE` (Linux: a policy is per thread; pid 0 is this
    /// one): it runs when a CPU would otherwise idle, and any other thread preempts it at once.
    static func yieldCPU() {
        var parameters = sched_param(sched_priority: 0)
        let schedIdle: Int32 = 5  // SCHED_IDLE, which Glibc's module map leaves out (a _GNU_SOURCE name)
        _ = sched_setscheduler(0, schedIdle, &parameters)
    }

    /// Runs the storm on a thread of its own (it blocks in `poll`, never in the cooperative
    /// pool) and returns what it saw. Throws `connectionFailed` if the sockets cannot be made.
    package static func run(_ options: Options) async throws(ConduitError) -> Report {
        let result: Result<Report, ConduitError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                if options.yieldsCPU { JoinStorm.yieldCPU() }
                continuation.resume(returning: Result { () throws(ConduitError) in
                    var storm = try JoinStormLoop(options)
                    defer { storm.closeSockets() }
                    return storm.run()
                })
            }
            thread.name = "conduit.join-storm"
            thread.start()
        }
        return try result.get()
    }
}

/// The storm's one thread: the socket pool, each socket's attempt, the pacing.
struct JoinStormLoop {
    private enum Phase: Equatable {
        case idle
        case awaitingCookie(ssrc: UInt32, nonce: UInt64)
        case awaitingAccept(ssrc: UInt32, nonce: UInt64)
        case awaitingRefusal(ssrc: UInt32, server: UInt32)
    }

    private struct Slot {
        let socket: Int32
        var phase = Phase.idle
        var deadline: UInt64 = 0
    }

    private let options: JoinStorm.Options
    private var slots: [Slot] = []
    private var idle: [Int] = []
    private var report = JoinStorm.Report()
    private var random = SystemRandomNumberGenerator()
    /// The junk's socket (-1 without junk) and the random bytes its datagrams are cut from.
    private var junkSocket: Int32 = -1
    private var junkBytes: [UInt8] = []
    /// The join's link packets, one per peer name the storm uses (a fresh engine's first packet:
    /// a fresh link at the relay expects exactly that).
    private let joinPackets: [[[UInt8]]]
    private static let mtu: UInt16 = 1_232

    init(_ options: JoinStorm.Options) throws(ConduitError) {
        self.options = options
        var packets: [[[UInt8]]] = []
        for index in 0..<64 {
            var engine = ARQEngine(configuration: ARQEngine.Configuration(), now: .zero)
            let join = RoomControlFrame.join(room: options.room, peer: PeerID(stringLiteral: "storm-\(index)"), dataSessionsSupported: true, token: options.token)
            _ = engine.send(join.encoded, channel: FrameTag.controlChannel, now: .zero)
            var batch = DatagramBatch()
            engine.pollTransmit(now: .zero, into: &batch)
            packets.append((0..<batch.count).map { batch.withDatagram($0) { Array($0) } })
        }
        joinPackets = packets
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(UInt16(options.port).bigEndian)
        guard inet_pton(AF_INET, options.host, &target.sin_addr) == 1 else {
            throw ConduitError(.invalidConfiguration, "join storm: '\(options.host)' is not an IPv4 address")
        }
        for index in 0..<options.sockets {
            slots.append(Slot(socket: try Self.connectedSocket(to: target)))
            idle.append(index)
        }
        if options.junkDatagrams > 0 {
            junkSocket = try Self.connectedSocket(to: target)
            junkBytes = (0..<65_536).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
    }

    /// A non-blocking UDP socket connected to `target`: the kernel picks the source port and
    /// filters out anyone but the relay.
    private static func connectedSocket(to target: sockaddr_in) throws(ConduitError) -> Int32 {
        var target = target
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ConduitError(.connectionFailed, "join storm: socket failed (errno \(errno))") }
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw ConduitError(.connectionFailed, "join storm: connect failed (errno \(errno))")
        }
        return fd
    }

    func closeSockets() {
        for slot in slots { close(slot.socket) }
        if junkSocket >= 0 { close(junkSocket) }
    }

    /// Sends the junk due by `now`: `junkDatagrams` spread evenly from `started` to `end`.
    private mutating func sendJunk(now: UInt64, started: UInt64, end: UInt64) {
        guard junkSocket >= 0 else { return }
        let elapsed = min(now, end) - started
        let due = Int(Double(options.junkDatagrams) * Double(elapsed) / Double(max(1, end - started)))
        while report.junkSent < due {
            let length = Int.random(in: 1...300, using: &random)
            let offset = Int.random(in: 0...(junkBytes.count - length), using: &random)
            _ = junkBytes.withUnsafeBytes { Glibc.send(junkSocket, $0.baseAddress! + offset, length, 0) }
            report.junkSent += 1
        }
    }

    private static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(duration.components.seconds) * 1_000_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000)
    }

    mutating func run() -> JoinStorm.Report {
        let started = Self.now()
        let end = started + Self.nanoseconds(options.duration)
        let interval = 1_000_000_000 / UInt64(max(1, options.attemptsPerSecond))
        let timeout = Self.nanoseconds(options.answerTimeout)
        var due = started
        var lastSweep = started
        var polled: [pollfd] = []
        var polledSlots: [Int] = []
        var buffer = [UInt8](repeating: 0, count: 2_048)
        while true {
            let now = Self.now()
            if now < end {
                // Start what is due, a bounded burst per pass; what cannot start now is deferred, not queued.
                var begun = 0
                while due <= now, begun < 256 {
                    due += interval
                    guard let index = idle.popLast() else {
                        report.deferred += 1
                        continue
                    }
                    startAttempt(index, deadline: now + timeout)
                    begun += 1
                }
                sendJunk(now: now, started: started, end: end)
            } else if idle.count == slots.count {
                break
            } else if now > end + timeout * 3 {
                break
            }
            if now - lastSweep >= 10_000_000 {
                lastSweep = now
                expire(now: now)
            }
            // Only sockets with an attempt under way can have anything to read.
            polled.removeAll(keepingCapacity: true)
            polledSlots.removeAll(keepingCapacity: true)
            for index in slots.indices where slots[index].phase != .idle {
                polled.append(pollfd(fd: slots[index].socket, events: Int16(POLLIN), revents: 0))
                polledSlots.append(index)
            }
            // One pass a millisecond at most: what arrived meanwhile is read in one go, so the
            // storm's own CPU stays small beside the relay's on a machine they share.
            let ready = poll(&polled, nfds_t(polled.count), 1)
            let spent = Self.now() - now
            if spent < 1_000_000 { usleep(useconds_t((1_000_000 - spent) / 1_000)) }
            guard ready > 0 else { continue }
            for (position, index) in polledSlots.enumerated() where polled[position].revents != 0 {
                while true {
                    let count = recv(slots[index].socket, &buffer, buffer.count, 0)
                    guard count > 0 else { break }
                    receive(buffer[0..<count], on: index, deadline: Self.now() + timeout)
                }
            }
        }
        for index in slots.indices where slots[index].phase != .idle { finish(index) }
        report.seconds = Double(min(Self.now(), end) - started) / 1e9
        return report
    }

    private mutating func startAttempt(_ index: Int, deadline: UInt64) {
        let ssrc: UInt32 = random.next()
        let nonce: UInt64 = random.next()
        slots[index].phase = .awaitingCookie(ssrc: ssrc, nonce: nonce)
        slots[index].deadline = deadline
        report.attempts += 1
        send(.hello(ssrc: ssrc, nonce: nonce, version: UDPControlMessage.protocolVersion, mtu: Self.mtu), on: index)
    }

    private mutating func receive(_ datagram: ArraySlice<UInt8>, on index: Int, deadline: UInt64) {
        switch slots[index].phase {
        case .idle:
            return  // late answers to an attempt already ended
        case .awaitingCookie(let ssrc, let nonce):
            guard case .cookie(_, nonce, let cookie)? = UDPControlMessage(bytes: datagram) else { return }
            report.cookies += 1
            slots[index].phase = .awaitingAccept(ssrc: ssrc, nonce: nonce)
            slots[index].deadline = deadline
            send(.helloWithCookie(ssrc: ssrc, nonce: nonce, version: UDPControlMessage.protocolVersion, mtu: Self.mtu, cookie: cookie), on: index)
        case .awaitingAccept(let ssrc, let nonce):
            guard case .accept(let server, ssrc, nonce, _)? = UDPControlMessage(bytes: datagram) else { return }
            report.accepts += 1
            slots[index].phase = .awaitingRefusal(ssrc: ssrc, server: server)
            slots[index].deadline = deadline
            var header = RTPHeader(sequence: random.next(), timestamp: 0, ssrc: ssrc)
            for packet in joinPackets[index % joinPackets.count] {
                sendBytes(header.bytes + packet, on: index)
                header.sequence &+= 1
            }
            report.joinsSent += 1
        case .awaitingRefusal(_, let server):
            if case .bye(server)? = UDPControlMessage(bytes: datagram) {
                report.closedByRelay += 1
                slots[index].phase = .idle
                idle.append(index)
                return
            }
            guard let header = RTPHeader(bytes: datagram), header.ssrc == server, let refusal = Self.refusal(in: datagram.dropFirst(RTPHeader.size)) else { return }
            report.refusals[refusal.description, default: 0] += 1
            finish(index)
        }
    }

    /// The refusal among the frames of a relay's link packet, if there is one.
    private static func refusal(in packet: ArraySlice<UInt8>) -> RelayRefusal? {
        guard let (_, frames) = try? LinkPacket.frames(of: Array(packet), expectChecksum: true) else { return nil }
        for case .data(let frame) in frames {
            let payload = Array(packet.dropFirst(frame.payload.lowerBound).prefix(frame.payload.count))
            if case .refused(let reason, _)? = try? RoomControlFrame.parse(payload) { return reason }
        }
        return nil
    }

    /// Gives up attempts whose answer is overdue (counted by the answer they lacked).
    private mutating func expire(now: UInt64) {
        for index in slots.indices where slots[index].phase != .idle && slots[index].deadline <= now {
            switch slots[index].phase {
            case .awaitingCookie: report.noCookie += 1
            case .awaitingAccept: report.noAccept += 1
            case .awaitingRefusal: report.noRefusal += 1
            case .idle: break
            }
            finish(index)
        }
    }

    /// Ends the socket's attempt: BYE if it had a link (so the listener frees it before the
    /// socket's next HELLO), and the socket is free again.
    private mutating func finish(_ index: Int) {
        if case .awaitingRefusal(let ssrc, _) = slots[index].phase { send(.bye(ssrc: ssrc), on: index) }
        if case .awaitingAccept(let ssrc, _) = slots[index].phase { send(.bye(ssrc: ssrc), on: index) }
        slots[index].phase = .idle
        idle.append(index)
    }

    private func send(_ message: UDPControlMessage, on index: Int) { sendBytes(message.bytes, on: index) }

    private func sendBytes(_ bytes: [UInt8], on index: Int) {
        // A full socket buffer drops the datagram: the attempt then times out and is counted.
        _ = bytes.withUnsafeBytes { Glibc.send(slots[index].socket, $0.baseAddress, $0.count, 0) }
    }
}

#endif
