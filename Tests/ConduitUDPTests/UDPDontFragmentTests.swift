import ConduitNetworkTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// Path MTU discovery with don't-fragment set (issue 17 item 4; RFC 8899 section 3): `conduit
/// listen` and `conduit send` in a network namespace of their own (`unshare -rn`: a new user and
/// network namespace, nothing reachable but its own loopback), whose loopback carries IP packets
/// of at most 1,400 bytes, both ends allowing 9,000-byte datagrams. Without DF the kernel would
/// fragment a 9,000-byte probe, the probe would arrive, and the search would settle far above the
/// path; with it the probe is refused (EMSGSIZE, counted as lost) and the size found is the path's.
@Suite("udp:// path MTU discovery with don't-fragment, in a network namespace", .timeLimit(.minutes(2)))
struct UDPDontFragmentTests {
    /// The `conduit` executable the test command built beside this test bundle.
    static let conduit: String? = {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("conduit").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Whether this machine lets an unprivileged process make a network namespace and set its
    /// loopback up. Spawned and reaped directly: `Process.waitUntilExit()` runs a run loop, where
    /// ThreadSanitizer's runtime once crashed (see `Process.exitStatus()`).
    static let namespaces: Bool = {
        let arguments = ["unshare", "-rn", "ip", "link", "set", "lo", "mtu", "1400", "up"]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/usr/bin/unshare", nil, nil, &argv, environ) == 0 else { return false }
        var status: Int32 = 0
        guard waitpid(pid, &status, 0) == pid else { return false }
        return status == 0
    }()

    @Test(
        "a 9,000-byte limit over a 1,400-byte loopback: every message arrives, and the link settles at the path's size",
        .enabled(if: conduit != nil && namespaces, "needs the conduit executable beside the test bundle, and unshare -rn with ip (util-linux, iproute2)"),
        arguments: [("127.0.0.1", 20), ("[::1]", 40)]
    )
    func theSearchSettlesAtThePathNotAboveIt(host: String, ipHeader: Int) async throws {
        let script = """
            set -u
            ip link set lo mtu 1400 up
            "$0" listen 'udp://\(host):47400?mtu=9000' --expect 400 --timeout 60 --json > "$1/listen.json" &
            listener=$!
            # Send once the listener is bound: a HELLO to a port nobody holds is refused at once (ICMP).
            for _ in $(seq 600); do grep -q '^listening on' "$1/listen.json" 2>/dev/null && break; sleep 0.05; done
            "$0" send 'udp://\(host):47400?mtu=9000' --stream 100 --type reliable-message --size 6000 --count 400 \\
                --rate 8mbps --timeout 60 --json > "$1/send.json"
            sent=$?
            wait $listener
            listened=$?
            echo "$sent $listened"
            """
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-df-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["-rn", "bash", "-c", script, try #require(Self.conduit), directory.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let status = await process.exitStatus()
        let statuses = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status == 0)
        let reports = ["listen.json", "send.json"].map { name in
            "\(name): " + ((try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? "(none)")
        }
        #expect(statuses.trimmingCharacters(in: .whitespacesAndNewlines) == "0 0", "exit statuses of send and listen; \(reports.joined(separator: "; "))")

        let last = { (name: String) throws -> [String: Any] in
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            let line = try #require(text.split(separator: "\n").last)
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let listen = try last("listen.json")
        #expect(listen["received"] as? Int == 400 && listen["missing"] as? Int == 0 && listen["duplicates"] as? Int == 0)
        #expect(listen["outOfOrder"] as? Int == 0 && listen["corrupted"] as? Int == 0)
        // 1,400 bytes less the IP header and UDP's 8 is the UDP payload; the link's size is that
        // less the 12-byte RTP header, found to within the search's resolution.
        let mtu = try #require(try last("send.json")["linkMTU"] as? Int)
        let path = 1_400 - ipHeader - 8 - 12
        print("[udp df] \(host): the link settled at \(mtu) bytes over a loopback of MTU 1,400 (limit 9,000; the path allows \(path))")
        #expect((path - 7...path).contains(mtu))
    }
}
