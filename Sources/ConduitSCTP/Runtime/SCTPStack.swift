#if SCTP
import CUsrsctp
import CUsrsctpSupport
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's one usrsctp instance, and the event loop that drives it.
///
/// This is ConduitSCTP's only global, and deliberately so: usrsctp keeps its whole state in C
/// globals (one stack, one timer wheel, one table of AF_CONN addresses), `usrsctp_init` may run
/// once per process, and `usrsctp_finish` fails until every association has drained. So there is
/// exactly one of these, created on first use and never torn down. It owns one event loop thread;
/// every usrsctp call, every callback from usrsctp and the UDP sockets that carry its packets run
/// there, which is what makes `usrsctp_init_nothreads` (no usrsctp threads at all) safe.
///
/// Callbacks from C capture nothing: they carry an AF_CONN address (a small integer we register
/// with usrsctp) and look the association up here; an address that is gone (closed) is ignored,
/// since usrsctp can still call back for an association after we closed its socket.
final class SCTPStack: @unchecked Sendable {
    static let shared = SCTPStack()

    /// Socket buffer bytes per association, each way.
    static let bufferBytes: UInt32 = 4 << 20
    /// How often usrsctp's timers run.
    static let tick = TimeAmount.milliseconds(10)

    let loop: any EventLoop
    /// How what the loop makes reaches the tasks awaiting it: every `await` of a submitted closure
    /// or of a future goes through it. (`SCTPInbox.next` does not: it takes the inbox's lock once
    /// after its continuation returns, which orders the hand-off the same way; keep that lock.)
    let handOff = SCTPHandOff()
    private let group: MultiThreadedEventLoopGroup

    // Everything below is confined to `loop`.
    private var connections: [UInt: SCTPConnection] = [:]
    private var nextAddress: UInt = 1
    private var lastTick: NIODeadline
    private var unflushed: [any Channel] = []
    private var flushScheduled = false
    /// Packets usrsctp sent for an address that was already released.
    private(set) var droppedOutput = 0
    /// Scratch space for received messages (one reader at a time: the loop).
    let receiveBuffer: UnsafeMutableRawBufferPointer

    private init() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        loop = group.next()
        lastTick = .now()
        receiveBuffer = .allocate(byteCount: 256 << 10, alignment: 16)
        let debug = getenv("CONDUIT_SCTP_DEBUG").map { String(cString: $0) == "1" } ?? false
        // Nothing else can touch usrsctp yet (this runs once, before any association exists).
        conduit_sctp_init(sctpOutput, sctpDebug, debug ? 1 : 0, Self.bufferBytes)
        loop.scheduleRepeatedTask(initialDelay: Self.tick, delay: Self.tick) { [unowned self] _ in self.runTimers() }
    }

    private func runTimers() {
        let now = NIODeadline.now()
        let elapsed = (now - lastTick).nanoseconds / 1_000_000
        guard elapsed > 0 else { return }
        lastTick = lastTick + .milliseconds(elapsed)
        usrsctp_handle_timers(UInt32(clamping: elapsed))
        // A send buffer that freed up without an upcall still gets drained.
        for connection in connections.values where connection.hasPendingSends { connection.scheduleService() }
    }

    // MARK: Addresses

    /// Registers `connection` under a fresh AF_CONN address. On the loop.
    func register(_ make: (UInt) -> SCTPConnection) -> SCTPConnection {
        loop.assertInEventLoop()
        let address = nextAddress
        nextAddress += 1
        let connection = make(address)
        connections[address] = connection
        usrsctp_register_address(Self.pointer(address))
        return connection
    }

    /// Forgets `address`; later callbacks for it are dropped. On the loop.
    func release(_ address: UInt) {
        loop.assertInEventLoop()
        guard connections.removeValue(forKey: address) != nil else { return }
        usrsctp_deregister_address(Self.pointer(address))
    }

    var connectionCount: Int { connections.count }

    static func pointer(_ address: UInt) -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: address)! }

    // MARK: Callbacks (on the loop: usrsctp only runs inside our calls to it)

    fileprivate func output(address: UInt, bytes: UnsafeRawBufferPointer) {
        guard let connection = connections[address] else {
            droppedOutput += 1
            return
        }
        connection.output(bytes)
    }

    fileprivate func upcall(address: UInt) {
        connections[address]?.scheduleService()
    }

    /// Flushes `channel` once the current loop task is done, so a burst of packets goes out in one
    /// vector write.
    func needsFlush(_ channel: any Channel) {
        if !unflushed.contains(where: { $0 === channel }) { unflushed.append(channel) }
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.execute { [unowned self] in
            flushScheduled = false
            let channels = unflushed
            unflushed.removeAll(keepingCapacity: true)
            for channel in channels { channel.flush() }
        }
    }
}

/// usrsctp's output callback: one SCTP packet for the association at `address`. The buffer is
/// usrsctp's and only valid during the call, so it is copied.
private let sctpOutput: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int, UInt8, UInt8) -> Int32 = { address, buffer, length, _, _ in
    guard let buffer else { return 0 }
    SCTPStack.shared.output(address: UInt(bitPattern: address), bytes: UnsafeRawBufferPointer(start: buffer, count: length))
    return 0
}

/// Socket events for the association whose address is `context`.
let sctpUpcall: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void = { _, context, _ in
    SCTPStack.shared.upcall(address: UInt(bitPattern: context))
}

/// usrsctp debug lines (only with CONDUIT_SCTP_DEBUG=1), formatted by the C trampoline.
private let sctpDebug: @convention(c) (UnsafePointer<CChar>?) -> Void = { line in
    guard let line else { return }
    _ = write(2, line, strlen(line))
}
#endif
