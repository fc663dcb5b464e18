public import ConduitCore
public import NIOCore

/// `HOST:PORT` as the command line spells UDP endpoints (`127.0.0.1:9000`, `[::1]:9000`).
public struct UDPEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// A numeric IPv4 or IPv6 address, or a host name.
    public var host: String
    /// The UDP port, 0…65535.
    public var port: Int

    /// Makes an endpoint from a host and a port.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`. Throws `invalidAddress` when the port is missing or out of range.
    public init(parsing text: String) throws(ConduitError) {
        let url = try TransportURL(parsing: "udp://\(text)")
        guard let port = url.port, url.path.isEmpty, url.query.isEmpty else {
            throw ConduitError(.invalidAddress, "'\(text)' is not HOST:PORT")
        }
        self.init(host: url.host, port: port)
    }

    /// The socket address; only numeric IP literals are accepted (no name resolution).
    public func socketAddress() throws(ConduitError) -> SocketAddress {
        do { return try SocketAddress(ipAddress: host, port: port) } catch {
            throw ConduitError(.invalidAddress, "'\(host)' is not an IPv4 or IPv6 address")
        }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
