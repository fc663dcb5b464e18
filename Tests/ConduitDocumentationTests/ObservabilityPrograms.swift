import Conduit
import ConduitUDP
import Logging
import Metrics
import Testing

// The README's "Logging and metrics" program, verbatim inside a function a test runs.

@Suite struct ObservabilityProgramTests {
    /// The host's logger and metrics factory reach the runtime and the UDP transport it registers.
    /// (No call here: the program's logger goes through the process-wide `LoggingSystem`, which
    /// ObservabilityTests watches for lines that no test asked for.)
    @Test func loggingAndMetrics() {
        let runtime = Self.loggingAndMetrics()
        #expect(runtime.observability.logger.label == "com.example.app.conduit")
        #expect(runtime.observability.logger.logLevel == .debug)
        #expect(runtime.registry.schemes.contains("udp"))
    }

    static func loggingAndMetrics() -> ConduitRuntime {
        var logger = Logger(label: "com.example.app.conduit")   // the host's handler
        logger.logLevel = .debug
        let metrics: any MetricsFactory = NOOPMetricsHandler.instance  // your swift-metrics backend's factory
        let runtime = ConduitRuntime(
            configuration: ConduitConfiguration(),
            registry: TransportRegistry.defaults.registering(UDPTransport(logger: logger, metricsFactory: metrics)),
            logger: logger,
            metricsFactory: metrics
        )
        // or: runtime.observability = ConduitObservability(logger: logger, metricsFactory: metrics)
        return runtime
    }
}
