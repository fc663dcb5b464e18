package import Conduit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `conduit bench --reference` measures beside Conduit, in the same run: usrsctp's own
/// `tsctp` (Debian's libusrsctp-examples) with its debug output kept off by preloading
/// a small library built on first use (``BenchReferenceRun/quietLibrary(at:)``), at each message size, and a plain UDP blast of 1,200-byte datagrams
/// (`conduit-udp-blast`, sendmmsg/recvmmsg), and iperf3 (Debian's `iperf3`): kernel TCP over
/// 127.0.0.1, the same byte count per message size as each Conduit run. Each is a pair of child processes on 127.0.0.1 with
/// free ephemeral ports, bounded in time and killed (SIGKILL) at the end of every run.
package struct BenchReferenceOptions: Sendable, Hashable {
    package var tsctpPath: String
    /// Where the library that keeps tsctp quiet is built (with the system's `cc`) if it is not there yet.
    package var quietLibraryPath: String
    package var blastPath: String
    /// iperf3, for kernel TCP over loopback.
    package var iperf3Path: String
    /// How long each reference sends.
    package var seconds: Double

    package init(
        tsctpPath: String = "/usr/lib/usrsctp/tsctp",
        quietLibraryPath: String = BenchReferenceOptions.besideExecutable("libconduit-tsctp-quiet.so"),
        blastPath: String = BenchReferenceOptions.besideExecutable("conduit-udp-blast"),
        iperf3Path: String = "/usr/bin/iperf3",
        seconds: Double = 3
    ) {
        self.iperf3Path = iperf3Path
        self.tsctpPath = tsctpPath
        self.quietLibraryPath = quietLibraryPath
        self.blastPath = blastPath
        self.seconds = seconds
    }

    /// `name` in the directory of the running executable: SwiftPM builds the library and the
    /// blast beside `conduit` (and beside the test bundle).
    package static func besideExecutable(_ name: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4_096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return name }
        let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return name }
        return "\(path[..<slash])/\(name)"
    }

    /// Refuses missing programs and silly durations before anything runs.
    package func validate() throws(ConduitError) {
        guard seconds >= 0.5, seconds <= 60 else {
            throw ConduitError(.invalidConfiguration, "reference seconds must be 0.5...60 (got \(seconds))")
        }
        for (path, what) in [(tsctpPath, "usrsctp's tsctp (apt-get install libusrsctp-examples)"),
                             (blastPath, "conduit-udp-blast (swift build builds it beside conduit)"),
                             (iperf3Path, "iperf3 (apt-get install iperf3)")]
        where access(path, X_OK) != 0 {
            throw ConduitError(.invalidConfiguration, "\(path) is not an executable: --reference needs \(what)")
        }
    }
}

/// One reference row of the report (`--json`: an element of `references`).
package struct BenchReferenceReport: Sendable, Codable, Hashable {
    /// `tsctp`, `iperf3` (kernel TCP) or `udp-blast`.
    package var name: String
    /// Message size (tsctp), write size (iperf3) or datagram size (the blast).
    package var size: Int
    package var runs: Int
    /// What the receiving side measured.
    package var megabytesPerSecond: BenchSpread

    package init(name: String, size: Int, megabytesPerSecond: [Double]) {
        self.name = name
        self.size = size
        runs = megabytesPerSecond.count
        self.megabytesPerSecond = BenchSpread(megabytesPerSecond) ?? BenchSpread(median: 0, min: 0, max: 0)
    }
}

/// Single runs of the references.
package enum BenchReferenceRun {
    package static let blastDatagramSize = 1_200

    /// One tsctp run: a server (`-E port -L 127.0.0.1`), then, once its UDP encapsulation port is
    /// bound, a client sending `size`-byte messages for `seconds`. The receiver's MB/s.
    package static func tsctp(size: Int, options: BenchReferenceOptions) async throws(ConduitError) -> Double {
        let serverPort = try freeUDPPort()
        var clientPort = try freeUDPPort()
        while clientPort == serverPort { clientPort = try freeUDPPort() }
        let environment = ["LD_PRELOAD": try await quietLibrary(at: options.quietLibraryPath)]
        let server = try ChildProcess(path: options.tsctpPath, arguments: ["-E", "\(serverPort)", "-L", "127.0.0.1"], environment: environment)
        defer { server.kill() }
        // The client's INIT must not race the server's bind (an INIT lost to an ICMP error waits a
        // whole retransmission timeout): wait until the port shows in /proc/net/udp.
        let bindDeadline = ContinuousClock.now + .seconds(5)
        while !udpPortIsBound(serverPort) {
            guard !server.hasExited, ContinuousClock.now < bindDeadline else {
                throw ConduitError(.connectionFailed, "tsctp server did not bind UDP port \(serverPort): \(server.text())")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let client = try ChildProcess(
            path: options.tsctpPath,
            arguments: ["-E", "\(clientPort)", "-U", "\(serverPort)", "-l", "\(size)", "-T", "\(Int(options.seconds.rounded(.up)))", "127.0.0.1"],
            environment: environment)
        defer { client.kill() }
        guard await client.waitForExit(until: ContinuousClock.now + .seconds(options.seconds + 20)) else {
            throw ConduitError(.timedOut, "tsctp client (\(size) B) did not finish; client: \(client.text()) server: \(server.text())")
        }
        // The server prints one CSV line per association when it ends:
        // length, messages sent, messages received, bytes, seconds, bytes/s, ...
        let received = await server.waitForLine(until: ContinuousClock.now + .seconds(3)) { line -> Double? in
            let fields = line.split(separator: ",").map { $0.trimmingSpaces }
            guard fields.count >= 6, Int(fields[0]) == size, let rate = Double(fields[5]) else { return nil }
            return rate / 1e6
        }
        if let received, received > 0 { return received }
        // Otherwise the sender's figure: "Throughput was 41029049.486431 Byte/sec."
        let sent = await client.waitForLine(until: ContinuousClock.now) { line -> Double? in
            guard line.hasPrefix("Throughput was ") else { return nil }
            return line.dropFirst("Throughput was ".count).split(separator: " ").first.flatMap { Double($0) }.map { $0 / 1e6 }
        }
        guard let sent, sent > 0 else {
            throw ConduitError(.protocolViolation, "tsctp (\(size) B) reported no throughput; client: \(client.text()) server: \(server.text())")
        }
        return sent
    }

    /// tsctp turns usrsctp's debug output on, which costs it 2-4x; preloaded, this makes that call
    /// do nothing. A reference tool, so it is not among the package's products: it is compiled
    /// here, once, with the system's C compiler.
    static let quietLibrarySource = """
        #include <stdint.h>
        int usrsctp_sysctl_set_sctp_debug_on(uint32_t v) { (void)v; return 0; }
        """

    /// `path`, after building the quiet library there if it is not there yet.
    package static func quietLibrary(at path: String) async throws(ConduitError) -> String {
        if access(path, R_OK) == 0 { return path }
        // Source and output named per process, created only if absent and never through a link,
        // so concurrent runs do not share files and nobody can point them elsewhere.
        let source = path + ".\(getpid()).c"
        let descriptor = open(source, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard descriptor >= 0, let file = fdopen(descriptor, "w") else {
            if descriptor >= 0 { _ = close(descriptor) }
            throw ConduitError(.invalidConfiguration, "cannot create \(source): \(ChildProcess.describeErrno())")
        }
        fputs(quietLibrarySource + "\n", file)
        fclose(file)
        defer { unlink(source) }
        // Built beside the final name and renamed, so a concurrent run never preloads half a file.
        let partial = path + ".\(getpid()).partial"
        let compiler = try ChildProcess(path: "/usr/bin/env", arguments: ["cc", "-shared", "-fPIC", "-O2", "-o", partial, source])
        guard await compiler.waitForExit(until: ContinuousClock.now + .seconds(60)), access(partial, R_OK) == 0 else {
            unlink(partial)
            throw ConduitError(.invalidConfiguration, "could not build \(path) with cc (needed to keep tsctp's debug output off): \(compiler.text())")
        }
        guard rename(partial, path) == 0 else {
            let why = ChildProcess.describeErrno()
            unlink(partial)
            throw ConduitError(.invalidConfiguration, "could not move the built library to \(path): \(why)")
        }
        return path
    }

    /// One blast run: the receiver on an ephemeral port, the sender for `seconds`. The receiver's MB/s.
    package static func blast(options: BenchReferenceOptions) async throws(ConduitError) -> Double {
        let receiver = try ChildProcess(path: options.blastPath, arguments: ["recv", "0"])
        defer { receiver.kill() }
        guard let port = await receiver.waitForLine(until: ContinuousClock.now + .seconds(5), { line -> Int? in
            line.hasPrefix("listening ") ? Int(line.dropFirst("listening ".count)) : nil
        }) else {
            throw ConduitError(.connectionFailed, "conduit-udp-blast recv did not listen: \(receiver.text())")
        }
        let sender = try ChildProcess(path: options.blastPath, arguments: ["send", "\(port)", "\(options.seconds)"])
        defer { sender.kill() }
        guard await sender.waitForExit(until: ContinuousClock.now + .seconds(options.seconds + 10)) else {
            throw ConduitError(.timedOut, "conduit-udp-blast send did not finish: \(sender.text())")
        }
        // "recv bytes N seconds S MB/s X", after the end marker or 2 s of silence.
        let rate = await receiver.waitForLine(until: ContinuousClock.now + .seconds(5)) { line -> Double? in
            guard line.hasPrefix("recv bytes "), let value = line.split(separator: " ").last else { return nil }
            return Double(value)
        }
        guard let rate, rate > 0 else {
            throw ConduitError(.protocolViolation, "conduit-udp-blast recv reported nothing: \(receiver.text())")
        }
        return rate
    }

    /// One iperf3 run: a one-off server on a free TCP port of 127.0.0.1, then, once it listens, a
    /// client (`-J`) writing `size`-byte writes for `options.seconds` (rounded up to whole seconds,
    /// iperf3's unit), as tsctp and the blast run. The receiver's MB/s, from the client's JSON
    /// report (`end.sum_received.bits_per_second`). Not a byte count (`-n`): a small one ends
    /// within a millisecond, while the data still sits in the socket buffers, and the server then
    /// reports nothing received (seen with 256 KiB on CI).
    package static func iperf3(size: Int, options: BenchReferenceOptions) async throws(ConduitError) -> Double {
        let port = try freePort(type: Int32(SOCK_STREAM.rawValue))
        let server = try ChildProcess(path: options.iperf3Path, arguments: ["-s", "-1", "-B", "127.0.0.1", "-p", "\(port)"])
        defer { server.kill() }
        // The server's own output is block-buffered into the pipe: wait for the listening socket instead.
        let listenDeadline = ContinuousClock.now + .seconds(5)
        while !portIsBound(port, tables: ["/proc/net/tcp", "/proc/net/tcp6"]) {
            guard !server.hasExited, ContinuousClock.now < listenDeadline else {
                throw ConduitError(.connectionFailed, "iperf3 server did not listen on TCP port \(port): \(server.text())")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let client = try ChildProcess(
            path: options.iperf3Path,
            arguments: ["-c", "127.0.0.1", "-p", "\(port)", "-t", "\(max(1, Int(options.seconds.rounded(.up))))", "-l", "\(size)", "-J"])
        defer { client.kill() }
        guard await client.waitForExit(until: ContinuousClock.now + .seconds(options.seconds + 60)) else {
            throw ConduitError(.timedOut, "iperf3 client (\(size) B) did not finish: \(client.text())")
        }
        let report = client.text()
        guard let rate = iperf3ReceivedBitsPerSecond(report), rate > 0 else {
            throw ConduitError(.protocolViolation, "iperf3 (\(size) B) reported no received throughput: \(report)")
        }
        return rate / 8 / 1e6
    }

    /// `end.sum_received.bits_per_second` of an iperf3 `-J` report: the first `bits_per_second`
    /// after the `"sum_received"` key (the report has one).
    package static func iperf3ReceivedBitsPerSecond(_ report: String) -> Double? {
        guard let sum = report.firstRange(of: "\"sum_received\""),
              let key = report[sum.upperBound...].firstRange(of: "\"bits_per_second\"") else { return nil }
        let value = report[key.upperBound...].drop { $0 == ":" || $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return Double(String(value.prefix { $0.isNumber || $0 == "." || $0 == "e" || $0 == "E" || $0 == "+" || $0 == "-" }))
    }

    /// A UDP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
    static func freeUDPPort() throws(ConduitError) -> Int {
        try freePort(type: Int32(SOCK_DGRAM.rawValue))
    }

    /// A port of socket type `type` on 127.0.0.1 that was free a moment ago.
    static func freePort(type: Int32) throws(ConduitError) -> Int {
        let descriptor = socket(AF_INET, type, 0)
        guard descriptor >= 0 else { throw ConduitError(.connectionFailed, "socket: \(ChildProcess.describeErrno())") }
        defer { _ = close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw ConduitError(.connectionFailed, "bind 127.0.0.1:0: \(ChildProcess.describeErrno())") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether some socket has UDP port `port` bound (IPv4 or IPv6), from /proc/net/udp{,6}.
    static func udpPortIsBound(_ port: Int) -> Bool {
        portIsBound(port, tables: ["/proc/net/udp", "/proc/net/udp6"])
    }

    /// Whether some socket in the /proc/net `tables` has local port `port`.
    static func portIsBound(_ port: Int, tables: [String]) -> Bool {
        let needle = ":" + String(port, radix: 16, uppercase: true).leftPadded(to: 4) + " "
        for table in tables {
            guard let file = fopen(table, "r") else { continue }
            defer { fclose(file) }
            var line = [CChar](repeating: 0, count: 512)
            while fgets(&line, Int32(line.count), file) != nil {
                let text = String(decoding: line.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                // "  12: 0100007F:26A3 00000000:0000 07 ...": the local address is the second field.
                let fields = text.split(separator: " ", omittingEmptySubsequences: true)
                if fields.count > 1, (fields[1] + " ").hasSuffix(needle) { return true }
            }
        }
        return false
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
