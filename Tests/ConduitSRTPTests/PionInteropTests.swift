#if SRTP
import ConduitCore
import ConduitImpairment
import ConduitNetworkTestSupport
import ConduitSRTP
import Foundation
import Testing

/// Interoperability with an independent SRTP implementation: pion/srtp (Go, Debian's
/// golang-github-pion-srtp.v2-dev, which `.ci/run` installs with golang-go), driven by the small
/// program in `Tests/Interop/srtp-pion`. Packets Conduit protects are decrypted by pion, and
/// packets pion protects are unprotected by Conduit, for every profile, RTP and RTCP.
///
/// To rerun by hand: `apt-get install golang-go golang-github-pion-srtp.v2-dev`, then
/// `swift test --filter PionInteropTests`.
@Suite("SRTP interoperability with pion/srtp", .enabled(if: PionInterop.isAvailable, "needs golang-go and golang-github-pion-srtp.v2-dev"))
struct PionInteropTests {
    @Test(arguments: SRTPProfile.allCases)
    func conduitAndPionReadEachOthersPackets(_ profile: SRTPProfile) async throws {
        var random = SeededRandom(seed: 0x5E7 &+ UInt64(profile.wireIndex))
        let key = try SRTPKeyMaterial(profile: profile, keyAndSalt: random.bytes(profile.keyMaterialLength))
        let ours = try SRTPSession(profile: profile, outbound: key, inbound: key)

        // Plain packets: RTP with payload type 96 and growing sequence numbers; RTCP sender reports.
        let rtp: [[UInt8]] = (0..<40).map { (index: Int) -> [UInt8] in
            let header: [UInt8] = [0x80, 96, UInt8(index >> 8), UInt8(index & 0xFF), 0, 0, 0x10, UInt8(index), 0x11, 0x22, 0x33, 0x44]
            return header + random.bytes(1 + random.below(1_200))
        }
        let rtcp: [[UInt8]] = (0..<8).map { _ in [0x80, 200, 0x00, 0x06, 0x11, 0x22, 0x33, 0x44] + random.bytes(20) }
        // What pion will protect for us comes from another SSRC.
        let pionRTP = rtp.map { packet in Array(packet[0..<8]) + [0x55, 0x66, 0x77, 0x88] + Array(packet[12...]) }
        let pionRTCP = rtcp.map { packet in Array(packet[0..<4]) + [0x55, 0x66, 0x77, 0x88] + Array(packet[8...]) }

        var protectedRTP: [[UInt8]] = []
        for packet in rtp {
            var bytes = packet
            try ours.protectRTP(&bytes)
            protectedRTP.append(bytes)
        }
        var protectedRTCP: [[UInt8]] = []
        for packet in rtcp {
            var bytes = packet
            try ours.protectRTCP(&bytes)
            protectedRTCP.append(bytes)
        }

        let reply = try await PionInterop.run([
            "profile": profile.name,
            "key": key.base64,
            "decrypt_rtp": protectedRTP.map(PionInterop.hex),
            "decrypt_rtcp": protectedRTCP.map(PionInterop.hex),
            "encrypt_rtp": pionRTP.map(PionInterop.hex),
            "encrypt_rtcp": pionRTCP.map(PionInterop.hex),
        ])
        // pion decrypts what Conduit protected, byte for byte.
        #expect(reply["decrypt_rtp"] == rtp.map(PionInterop.hex))
        #expect(reply["decrypt_rtcp"] == rtcp.map(PionInterop.hex))
        // Conduit unprotects what pion protected, byte for byte.
        let fromPionRTP = try #require(reply["encrypt_rtp"]).map(PionInterop.bytes)
        let fromPionRTCP = try #require(reply["encrypt_rtcp"]).map(PionInterop.bytes)
        #expect(fromPionRTP.count == rtp.count && fromPionRTCP.count == rtcp.count)
        for (index, packet) in fromPionRTP.enumerated() {
            var bytes = packet
            #expect(ours.unprotectRTP(&bytes) == .ok, "RTP packet \(index) from pion")
            #expect(bytes == pionRTP[index])
        }
        for (index, packet) in fromPionRTCP.enumerated() {
            var bytes = packet
            #expect(ours.unprotectRTCP(&bytes) == .ok, "RTCP packet \(index) from pion")
            #expect(bytes == pionRTCP[index])
        }
    }
}

enum PionInterop {
    static let gopath = "/usr/share/gocode"
    static let program = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/srtp-pion/main.go").path

    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/go")
            && FileManager.default.fileExists(atPath: "\(gopath)/src/github.com/pion/srtp/v2/context.go")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return out
    }

    /// Runs the pion program on one request; its JSON reply, each list by name. `go run` takes
    /// seconds: the wait suspends (a thread of its own waits) instead of blocking a
    /// thread of the cooperative pool, which would stall every other test with it.
    static func run(_ request: [String: Any]) async throws -> [String: [String]] {
        let process = Process()
        // At the lowest CPU priority (as PionDataChannelPeer's build): on a fresh machine `go run`
        // compiles pion first, and at normal priority that starved the wall-clock tests beside it.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nice")
        process.arguments = ["-n", "19", "/usr/bin/go", "run", program]
        var environment = ProcessInfo.processInfo.environment
        environment["GO111MODULE"] = "off"
        environment["GOPATH"] = gopath
        environment["GOFLAGS"] = ""
        environment["GOCACHE"] = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-go-cache").path
        process.environment = environment
        // Files, not pipes: nothing has to read while the program runs.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("srtp-pion-\(UUID().uuidString)")
        let (inputURL, outputURL, errorURL) = (scratch.appendingPathExtension("in"), scratch.appendingPathExtension("out"), scratch.appendingPathExtension("err"))
        defer { for url in [inputURL, outputURL, errorURL] { try? FileManager.default.removeItem(at: url) } }
        try JSONSerialization.data(withJSONObject: request).write(to: inputURL)
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        let (input, output, errors) = (try FileHandle(forReadingFrom: inputURL), try FileHandle(forWritingTo: outputURL), try FileHandle(forWritingTo: errorURL))
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let status = await process.exitStatus()
        for handle in [input, output, errors] { try handle.close() }
        let data = try Data(contentsOf: outputURL)
        let problems = String(decoding: try Data(contentsOf: errorURL), as: UTF8.self)
        guard status == 0 else {
            throw ConduitError(.protocolViolation, "srtp-pion failed (\(status)): \(problems)")
        }
        let object = try JSONSerialization.jsonObject(with: data) as? [String: [String]?] ?? [:]
        return object.compactMapValues { $0 }
    }
}

extension SRTPProfile {
    var wireIndex: Int { SRTPProfile.allCases.firstIndex(of: self) ?? 0 }
}
#endif
