import ConduitStreamCatalog
import Testing

@Suite("Stream catalog")
struct StreamCatalogTests {
    @Test func parsesEntriesCommentsAndDescriptions() {
        let text = """
            # a comment
            chat    100 reliable-message   Chat lines  # trailing comment

            files   102 reliable-bytes
            """
        let (catalog, problems) = StreamCatalog.parse(text, file: "app.streams")
        #expect(problems.isEmpty)
        #expect(catalog.entries.map(\.name) == ["chat", "files"])
        #expect(catalog.entries.map(\.id) == [100, 102])
        #expect(catalog.entries[0].description == "Chat lines")
        #expect(catalog.entries[0].line == 2)
        #expect(catalog.entries[1].description.isEmpty)
    }

    @Test func everyProblemIsADiagnosticNamingFileLineAndEntry() {
        let text = """
            chat     100  reliable-message
            low      99   reliable-message
            high     1000 unreliable-bytes
            again    100  reliable-bytes
            chat     150  reliable-bytes
            odd      151  reliable-stream
            9lives   152  reliable-message
            short    153
            nonint   1x0  reliable-message
            """
        let (catalog, problems) = StreamCatalog.parse(text, file: "app.streams")
        #expect(catalog.entries.map(\.name) == ["chat"])
        #expect(problems.map(\.description) == [
            "app.streams:2: error: entry 'low': stream ID 99 is outside 100...999",
            "app.streams:3: error: entry 'high': stream ID 1000 is outside 100...999",
            "app.streams:4: error: entry 'again': stream ID 100 is already used by 'chat' on line 1",
            "app.streams:5: error: entry 'chat': the name is already used on line 1",
            "app.streams:6: error: entry 'odd': unknown session type 'reliable-stream' (expected reliable-message, unreliable-message, reliable-bytes, unreliable-bytes)",
            "app.streams:7: error: entry '9lives': the name must be a Swift identifier (letters, digits, underscores; not starting with a digit)",
            "app.streams:8: error: entry 'short' needs at least a name, an ID and a type",
            "app.streams:9: error: entry 'nonint': stream ID '1x0' is not an integer",
        ])
    }

    @Test func generatesTypedConstants() {
        let (catalog, _) = StreamCatalog.parse("chat 100 reliable-message Say \"hi\"\ncursor 101 unreliable-message", file: "x.streams")
        let source = catalog.swiftSource(namespace: "Streams", sourceFile: "x.streams")
        #expect(source.contains("enum Streams {"))
        #expect(source.contains(#"static let chat = StreamDescriptor(name: "chat", id: 100, type: .reliableMessage, summary: "Say \"hi\"")"#))
        #expect(source.contains("static let cursor = StreamDescriptor(name: \"cursor\", id: 101, type: .unreliableMessage, summary: \"\")"))
        #expect(source.contains("static let all: [StreamDescriptor] = [chat, cursor]"))
    }
}
