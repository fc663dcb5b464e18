/// A transport address as configuration spells it: `scheme://host[:port][/path][?key=value&...]`.
///
/// `loopback://demo`, `udp://127.0.0.1:9000?mtu=1400`, `sctp+udp://[::1]:5000`. Parsed without
/// Foundation, strictly: a malformed string is a typed error naming what is wrong.
public struct TransportURL: Hashable, Sendable, CustomStringConvertible {
    /// The scheme, lowercased: `loopback`, `udp`, `sctp+udp`, `sctp`.
    public var scheme: String
    /// Host name, IP literal (without brackets) or loopback name.
    public var host: String
    /// The port, if the URL has one.
    public var port: Int?
    /// The path after the authority, without the leading slash; usually empty.
    public var path: String
    /// The query's options, by name.
    public var query: [String: String]

    /// Makes a URL from its parts.
    public init(scheme: String, host: String, port: Int? = nil, path: String = "", query: [String: String] = [:]) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
    }

    /// Parses `scheme://host[:port][/path][?key=value&...]`. Throws `invalidAddress` naming what is wrong.
    public init(parsing text: String) throws(ConduitError) {
        func bad(_ why: String) -> ConduitError {
            ConduitError(.invalidAddress, "'\(text)' is not a transport URL: \(why)")
        }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
            throw bad("expected scheme://address")
        }
        let scheme = text[..<colon].lowercased()
        guard !scheme.isEmpty, scheme.unicodeScalars.allSatisfy(Self.isSchemeCharacter) else {
            throw bad("invalid scheme")
        }
        var rest = text[text.index(colon, offsetBy: 3)...]
        var query: [String: String] = [:]
        if let q = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: q)...].split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = String(parts[0])
                guard !key.isEmpty else { throw bad("empty query key") }
                guard query[key] == nil else { throw bad("query key '\(key)' repeats") }
                query[key] = parts.count > 1 ? String(parts[1]) : ""
            }
            rest = rest[..<q]
        }
        var path = ""
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = rest[..<slash]
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw bad("unclosed '[' in IPv6 address") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw bad("unexpected text after ']'") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw bad("missing host or name") }
        var port: Int?
        if let portText {
            guard portText.allSatisfy(\.isASCIIDigit), let value = Int(portText), (0...65535).contains(value) else {
                throw bad("port '\(portText)' is not 0...65535")
            }
            port = value
        }
        self.init(scheme: scheme, host: String(host), port: port, path: path, query: query)
    }

    static func isSchemeCharacter(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("0"..."9").contains(c) || c == "+" || c == "-" || c == "."
    }

    /// An integer query option, or `defaultValue`, or a typed error if present but malformed.
    public func intOption(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(ConduitError) -> Int {
        guard let text = query[key] else { return defaultValue }
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let value = Int(text), range.contains(value) else {
            throw ConduitError(.invalidConfiguration, "option \(key)=\(text) in \(self) must be an integer in \(range)")
        }
        return value
    }

    /// The query option that bounds `connect` on the transports that take it (`udp`, `sctp+udp`).
    public static let connectTimeoutOption = "connect-timeout-ms"

    /// The connect limit this URL asks for: its `connect-timeout-ms` when present (it overrides
    /// the configuration), else `configured`.
    public func connectTimeout(default configured: Duration) throws(ConduitError) -> Duration {
        guard query[Self.connectTimeoutOption] != nil else { return configured }
        return .milliseconds(try intOption(Self.connectTimeoutOption, default: 0, in: 1...3_600_000))
    }

    /// This URL with `connect-timeout-ms` set to `timeout` unless it has its own (for transports
    /// that take the option).
    public func withConnectTimeout(default timeout: Duration) -> TransportURL {
        guard query[Self.connectTimeoutOption] == nil else { return self }
        var url = self
        let (seconds, attoseconds) = timeout.components
        let milliseconds = max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
        url.query[Self.connectTimeoutOption] = String(milliseconds)
        return url
    }

    public var description: String {
        var text = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)"
        if let port { text += ":\(port)" }
        text += path
        if !query.isEmpty {
            text += "?" + query.sorted(by: { $0.key < $1.key }).map { $0.value.isEmpty ? $0.key : "\($0.key)=\($0.value)" }.joined(separator: "&")
        }
        return text
    }
}

extension Character {
    /// `0`...`9` only (`Int("+5")` parses, and configuration should not).
    package var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
