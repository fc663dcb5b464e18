import Conduit

/// The transports `conduit listen` and `conduit send` can reach: built in this one place, so a
/// transport module joins the command line with one line here.
enum CommandRegistry {
    static func make() -> TransportRegistry { .defaults }
}
