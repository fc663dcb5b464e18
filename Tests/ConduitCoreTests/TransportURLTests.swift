import ConduitCore
import Testing

// TransportURL parsing and TransportRegistry resolution.

@Suite("Transport URL")
struct TransportURLTests {
    @Test("parses a loopback name")
    func loopback() throws {
        let url = try TransportURL(parsing: "loopback://demo")
        #expect(url == TransportURL(scheme: "loopback", host: "demo"))
        #expect(url.port == nil)
        #expect(url.path == "")
        #expect(url.query == [:])
        #expect(url.description == "loopback://demo")
    }

    @Test("parses host, port and query options (with and without values)")
    func udpWithQuery() throws {
        let url = try TransportURL(parsing: "udp://127.0.0.1:9000?mtu=1400&x")
        #expect(url.scheme == "udp")
        #expect(url.host == "127.0.0.1")
        #expect(url.port == 9_000)
        #expect(url.path == "")
        #expect(url.query == ["mtu": "1400", "x": ""])
        #expect(url.description == "udp://127.0.0.1:9000?mtu=1400&x")
        #expect(try TransportURL(parsing: url.description) == url)
    }

    @Test("parses a bracketed IPv6 literal and a compound scheme")
    func ipv6() throws {
        let url = try TransportURL(parsing: "sctp+udp://[::1]:5000")
        #expect(url == TransportURL(scheme: "sctp+udp", host: "::1", port: 5_000))
        #expect(url.description == "sctp+udp://[::1]:5000")
        let noPort = try TransportURL(parsing: "udp://[fe80::1%25eth0]")
        #expect(noPort.host == "fe80::1%25eth0")
        #expect(noPort.port == nil)
    }

    @Test("parses a path, with port and query around it")
    func path() throws {
        #expect(try TransportURL(parsing: "loopback://demo/room/1")
            == TransportURL(scheme: "loopback", host: "demo", path: "/room/1"))
        let url = try TransportURL(parsing: "ws://example.com:8080/conduit/v1?token=abc=def&mtu=1200")
        #expect(url == TransportURL(
            scheme: "ws", host: "example.com", port: 8_080, path: "/conduit/v1", query: ["token": "abc=def", "mtu": "1200"]
        ))
        #expect(url.description == "ws://example.com:8080/conduit/v1?mtu=1200&token=abc=def")
        #expect(try TransportURL(parsing: "udp://[::1]:7/p").path == "/p")
    }

    @Test("lower-cases the scheme only; ports at the range ends; empty query pairs are skipped")
    func details() throws {
        let url = try TransportURL(parsing: "UDP://Host.Example:0?&a=1&&")
        #expect(url.scheme == "udp")
        #expect(url.host == "Host.Example")
        #expect(url.port == 0)
        #expect(url.query == ["a": "1"])
        #expect(try TransportURL(parsing: "udp://h:65535").port == 65_535)
    }

    @Test("refuses malformed addresses with invalidAddress", arguments: [
        "",  // nothing
        "demo",  // missing scheme
        "loopback:demo",  // missing //
        "loopback:/demo",
        "://demo",  // empty scheme
        "lo_op://demo",  // invalid scheme character
        "udp://127.0.0.1:70000",  // port out of range
        "udp://127.0.0.1:65536",
        "udp://127.0.0.1:-1",
        "udp://127.0.0.1:abc",  // non-numeric port
        "udp://127.0.0.1:",  // empty port
        "udp://",  // empty host
        "udp://:9000",
        "udp:///path",
        "udp://?mtu=1",
        "udp://[]:9000",
        "udp://[::1:9000",  // unclosed '['
        "udp://[::1]9000",  // text after ']'
        "udp://h?mtu=1&mtu=2",  // repeated query key
        "udp://h?=1",  // empty query key
    ])
    func refuses(text: String) {
        let error = #expect(throws: ConduitError.self) {
            _ = try TransportURL(parsing: text)
        }
        #expect(error?.code == .invalidAddress)
        #expect(error?.message.contains("is not a transport URL") == true)
    }

    @Test("integer options: present, absent, malformed and out of range")
    func intOption() throws {
        let url = try TransportURL(parsing: "udp://h:1?mtu=1400&x&big=99999&neg=-3&word=abc")
        #expect(try url.intOption("mtu", default: 1_200, in: 576...9_000) == 1_400)
        #expect(try url.intOption("absent", default: 1_200, in: 576...9_000) == 1_200)
        #expect(try url.intOption("neg", default: 0, in: -5...5) == -3)
        for key in ["x", "big", "neg", "word"] {
            let error = #expect(throws: ConduitError.self) {
                _ = try url.intOption(key, default: 1_200, in: 576...9_000)
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("option \(key)=") == true)
        }
    }
}

/// A transport that only has a name, to exercise the registry.
struct FakeTransport: Transport {
    let schemes: [String]
    let tag: String

    func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        throw ConduitError(.unsupportedByTransport, "\(tag) cannot connect")
    }

    func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        throw ConduitError(.unsupportedByTransport, "\(tag) cannot listen")
    }
}

@Suite("Transport registry")
struct TransportRegistryTests {
    @Test("resolves registered schemes case-insensitively")
    func resolves() throws {
        var registry = TransportRegistry()
        #expect(registry.schemes == [])
        registry.register(FakeTransport(schemes: ["fake", "Fake+UDP"], tag: "one"))
        #expect(registry.schemes == ["fake", "fake+udp"])
        let (transport, url) = try registry.resolve("FAKE://host:1")
        #expect((transport as? FakeTransport)?.tag == "one")
        #expect(url == TransportURL(scheme: "fake", host: "host", port: 1))
        #expect((registry.transport(for: "FAKE+udp") as? FakeTransport)?.tag == "one")
        #expect(registry.transport(for: "udp") == nil)
    }

    @Test("an unknown scheme is unknownTransport and lists the known ones")
    func unknownScheme() {
        let registry = TransportRegistry([
            FakeTransport(schemes: ["zeta"], tag: "z"),
            FakeTransport(schemes: ["alpha"], tag: "a"),
        ])
        let unknown = #expect(throws: ConduitError.self) {
            _ = try registry.resolve("udp://127.0.0.1:9000")
        }
        #expect(unknown?.code == .unknownTransport)
        #expect(unknown?.message == "no transport for 'udp://' (registered: alpha://, zeta://)")
        // A malformed string is an address error, not an unknown transport.
        let malformed = #expect(throws: ConduitError.self) {
            _ = try registry.resolve("alpha:/x")
        }
        #expect(malformed?.code == .invalidAddress)
    }

    @Test("later registrations replace earlier ones; registering(_:) leaves the original alone")
    func replacement() throws {
        let base = TransportRegistry([FakeTransport(schemes: ["fake"], tag: "old")])
        let updated = base.registering(FakeTransport(schemes: ["fake", "other"], tag: "new"))
        let fromBase = try base.resolve("fake://x").transport as? FakeTransport
        let fromUpdated = try updated.resolve("fake://x").transport as? FakeTransport
        #expect(fromBase?.tag == "old")
        #expect(base.schemes == ["fake"])
        #expect(fromUpdated?.tag == "new")
        #expect(updated.schemes == ["fake", "other"])
    }

    @Test("the fake transport's errors are typed")
    func fakeErrors() async {
        let transport = FakeTransport(schemes: ["fake"], tag: "f")
        do throws(ConduitError) {
            _ = try await transport.connect(to: TransportURL(scheme: "fake", host: "x"))
            Issue.record("connect should fail")
        } catch {
            #expect(error.code == .unsupportedByTransport)
        }
    }

    @Test("capabilities derive the fragment size from the MTU")
    func capabilities() {
        let capabilities = TransportCapabilities(
            isReliable: true, isOrdered: true, supportsPartialReliability: false, maxDatagramSize: 65_535, mtu: 1_232
        )
        #expect(capabilities.fragmentSize == 1_200)
    }
}
