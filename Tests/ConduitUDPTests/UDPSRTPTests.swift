#if SRTP
import Conduit
import ConduitNetworkTestSupport
import ConduitCore
import ConduitImpairment
import ConduitSRTP
import ConduitUDP
import Foundation
import NIOCore
import Testing

extension UDPTransportTests {
    /// SRTP on the UDP transport: keys from a file or the environment, every datagram protected,
    /// other keys refused at once with a clear error, forgeries and replays dropped and counted.
    @Suite("UDP transport with SRTP", .timeLimit(.minutes(2)))
    struct UDPSRTPTests {
        /// Writes one random key (both directions) for `profile` to a temporary file.
        static func keyFile(_ profile: SRTPProfile, seed: UInt64) throws -> String {
            var random = SeededRandom(seed: seed)
            let key = try SRTPKeyMaterial(profile: profile, keyAndSalt: random.bytes(profile.keyMaterialLength))
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-srtp-\(profile.name)-\(seed).key").path
            try key.base64.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        static func runtime() -> ConduitRuntime {
            var configuration = ConduitConfiguration()
            configuration.rateLimit = .unlimited
            configuration.connectTimeout = .seconds(3)
            return ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport(keyReader: .testFilesAndEnvironment)))
        }

        static let marker = Array("CONDUIT-PLAINTEXT-MARKER-".utf8)

        static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
            guard haystack.count >= needle.count else { return false }
            return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
        }

        @Test(arguments: SRTPProfile.allCases)
        func callsRunOverSRTPAndNothingTravelsInTheClear(_ profile: SRTPProfile) async throws {
            let path = try Self.keyFile(profile, seed: 1)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let query = "?srtp=\(profile.name)&srtp-key-file=\(path)"
            let runtime = Self.runtime()
            let listener = try await runtime.listen(on: "udp://127.0.0.1:0\(query)", as: "bob")
            let (tap, front) = try await UDPTap.start(upstream: try SocketAddress(ipAddress: "127.0.0.1", port: listener.url.port!))
            async let accepted = listener.accept()
            let caller = try await runtime.connect(to: "udp://127.0.0.1:\(front.port!)\(query)", as: "alice")
            let callee = try #require(try await accepted)
            let outbound = try await caller.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
            #expect(await UDPLossyCallTests.awaitIncoming(callee)?.0 == 100)
            let inbound = try await callee.makeInboundDataSession(streamID: 100, expecting: .reliableMessage)
            let messages: [[UInt8]] = (0..<20).map { Self.marker + Array(repeating: UInt8($0), count: 100 * $0) }
            for (index, message) in messages.enumerated() { try await outbound.send(message, timestamp: UInt64(index)) }
            var received: [[UInt8]] = []
            for await event in inbound.events {
                guard case .message(let message) = event else { continue }
                received.append(message.bytes)
                if received.count == messages.count { break }
            }
            #expect(received == messages)

            // Replaying a datagram the client sent, from the client's address, is dropped.
            let records = tap.records.withLock { $0 }
            let data = try #require(records.last { $0.toServer && $0.bytes.count > 12 && $0.bytes[1] & 0x7F == 96 })
            try await tap.injectToServer(data.bytes)
            // A forged one (one bit flipped in the payload) too.
            var forged = data.bytes
            forged[forged.count / 2] ^= 0x10
            try await tap.injectToServer(forged)
            try await Task.sleep(for: .milliseconds(200))

            #expect(!records.isEmpty)
            #expect(records.allSatisfy { !Self.contains($0.bytes, Self.marker) }, "a datagram carried the payload in the clear")
            // RTCP handshake packets are SRTCP: the clear "CNDT" name is encrypted away.
            #expect(records.allSatisfy { !Self.contains($0.bytes, Array("CNDT".utf8)) })
            await caller.hangUp()
            await callee.hangUp()
            await listener.close()
            await tap.stop()
        }

        @Test func otherKeysAreRefusedAtOnceWithAClearError() async throws {
            let ours = try Self.keyFile(.aesCM128HmacSha1_80, seed: 2)
            let theirs = try Self.keyFile(.aesCM128HmacSha1_80, seed: 3)
            defer {
                try? FileManager.default.removeItem(atPath: ours)
                try? FileManager.default.removeItem(atPath: theirs)
            }
            let runtime = Self.runtime()
            let listener = try await runtime.listen(on: "udp://127.0.0.1:0?srtp-key-file=\(ours)", as: "bob")
            let port = listener.url.port!
            for client in ["?srtp-key-file=\(theirs)", "", "?srtp=aes-cm-128-hmac-sha1-32&srtp-key-file=\(ours)"] {
                let started = ContinuousClock.now
                do {
                    _ = try await runtime.connect(to: "udp://127.0.0.1:\(port)\(client)", as: "alice")
                    Issue.record("connecting with \(client.isEmpty ? "no SRTP" : client) succeeded")
                } catch {
                    #expect(error.code == .connectionFailed, "\(client): \(error)")
                    #expect(error.message.contains("SRTP"), "\(client): \(error)")
                }
                #expect(started.duration(to: .now) < .seconds(2), "the refusal must not wait for the connect timeout")
            }
            await listener.close()
        }

        @Test func keysComeFromTheEnvironmentAndBadKeysAreTypedErrors() async throws {
            var random = SeededRandom(seed: 4)
            let key = try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, keyAndSalt: random.bytes(30))
            setenv("CONDUIT_TEST_SRTP_KEY", key.base64, 1)
            defer { unsetenv("CONDUIT_TEST_SRTP_KEY") }
            let runtime = Self.runtime()
            let listener = try await runtime.listen(on: "udp://127.0.0.1:0?srtp-key-env=CONDUIT_TEST_SRTP_KEY", as: "bob")
            async let accepted = listener.accept()
            let caller = try await runtime.connect(to: "udp://127.0.0.1:\(listener.url.port!)?srtp-key-env=CONDUIT_TEST_SRTP_KEY", as: "alice")
            let callee = try #require(try await accepted)
            #expect(caller.remotePeer == "bob" && callee.remotePeer == "alice")
            await caller.hangUp()
            await callee.hangUp()
            await listener.close()

            for bad in ["?srtp=aes-cm-256", "?srtp=aes-cm-128-hmac-sha1-80", "?srtp-key-env=CONDUIT_NO_SUCH_VARIABLE", "?srtp-key-file=/nonexistent/key"] {
                let transport = UDPTransport(keyReader: .testFilesAndEnvironment)
                await #expect(throws: ConduitError.self, "\(bad)") {
                    let listener = try await transport.listen(on: TransportURL(parsing: "udp://127.0.0.1:0\(bad)"))
                    await listener.close()
                }
            }
        }

        @Test("reliable messages through 10 % loss, reordering and duplication with SRTP on")
        func reliabilityHoldsWithSRTP() async throws {
            let path = try Self.keyFile(.aesCM128HmacSha1_80, seed: 5)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let setup = try await UDPLossyCallTests.connect(impairment: .harsh(seed: 51), query: "?srtp-key-file=\(path)")
            let messages = UDPLossyCallTests.messages(count: 200, seed: 52)
            let received = try await setup.transferReliably(on: 100, messages)
            #expect(received.map(\.timestamp) == (0..<UInt64(messages.count)).map { $0 })
            #expect(received.map(\.bytes) == messages)
            await setup.end()
        }
    }
}
#endif
