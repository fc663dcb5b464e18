package import Conduit

/// A transport this build was made without: every use fails at once, naming the package trait.
package struct TransportLeftOut: Transport {
    package let scheme: String
    package let trait: String
    package let library: String

    package init(scheme: String, trait: String, library: String) {
        self.scheme = scheme
        self.trait = trait
        self.library = library
    }

    package var schemes: [String] { [scheme] }

    package var error: ConduitError {
        ConduitError(
            .unsupportedByTransport,
            "\(scheme):// is not in this build of conduit: build with the package trait \(trait) (swift build --enable-all-traits builds every transport), which needs \(library)"
        )
    }

    package func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink { throw error }
    package func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener { throw error }
}
