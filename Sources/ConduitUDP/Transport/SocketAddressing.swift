package import ConduitCore
package import NIOCore

/// Socket addresses as the UDP-based transports name, bind and resolve them (the UDP transport
/// and SCTP over UDP share these through `package` access).
package enum SocketAddressing {
    /// `HOST:PORT` with IPv6 hosts in brackets.
    package static func describe(_ address: SocketAddress) -> String {
        let host = address.ipAddress ?? "?"
        let port = address.port ?? 0
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The wildcard address of `remote`'s family, port 0: where a client socket binds.
    package static func ephemeral(for remote: SocketAddress) throws(ConduitError) -> SocketAddress {
        do {
            return try SocketAddress(ipAddress: remote.protocol == .inet6 ? "::" : "0.0.0.0", port: 0)
        } catch {
            throw ConduitError(.invalidAddress, "no local address for \(describe(remote))")
        }
    }

    /// The socket address of `url`: an IP literal, else a name resolved by the system.
    package static func resolve(_ url: TransportURL) throws(ConduitError) -> SocketAddress {
        let port = url.port ?? 0
        if let address = try? SocketAddress(ipAddress: url.host, port: port) { return address }
        do {
            return try SocketAddress.makeAddressResolvingHost(url.host, port: port)
        } catch {
            throw ConduitError(.invalidAddress, "cannot resolve '\(url.host)' in \(url): \(error)")
        }
    }
}
