@testable import Conduit
import Testing

/// The timedOut error of a connect names the one connect limit and, when connecting the link used
/// part of it, how much: a starved machine once reported "did not answer the join within 0.0
/// seconds", the part of the limit left after the link, which said nothing of where the time went.
@Suite struct ConnectWaitMessageTests {
    @Test func theWaitAloneWhenTheLinkTookNothing() {
        #expect(CallEngine.describeWait(.seconds(10), of: .seconds(10)) == "within 10 s")
        #expect(CallEngine.describeWait(.milliseconds(300), of: nil) == "within 300 ms")
    }

    @Test func theLimitAndTheLinksShareWhenTheLinkTookSome() {
        #expect(
            ConferenceEngine.describeWait(.zero, of: .seconds(10))
                == "within the connect limit of 10 s, 10 s of which connecting the link took"
        )
        #expect(
            CallEngine.describeWait(.milliseconds(2_750), of: .seconds(5))
                == "within the connect limit of 5 s, 2250 ms of which connecting the link took"
        )
    }
}
