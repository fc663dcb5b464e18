import ConduitFuzzTargets
import Foundation
import Testing

/// The fuzz targets' committed inputs, replayed through their harnesses: the seed corpora
/// (`Fuzz/corpus/<target>/`, made by ``SeedCorpus``) and every finding's input
/// (`Fuzz/regressions/<target>/`), so the harnesses run in `swift test` and findings stay fixed.
@Suite struct FuzzCorpusTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz").standardized

    static func inputs(_ kind: String, _ target: String) throws -> [(name: String, bytes: [UInt8])] {
        let directory = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted().map { name in
            (name, Array(try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }

    @Test("every committed seed and regression input passes its harness", arguments: FuzzTargets.all.map(\.name))
    func replay(target name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let seeds = try Self.inputs("corpus", name)
        #expect(!seeds.isEmpty, "no seeds committed for \(name)")
        for (file, bytes) in try seeds + Self.inputs("regressions", name) {
            do { try target.run(bytes) } catch { Issue.record("\(file): \(error)") }
        }
    }

    @Test("the committed seeds are exactly what SeedCorpus makes (CONDUIT_FUZZ_WRITE_SEEDS=1 rewrites them)",
          arguments: FuzzTargets.all.map(\.name))
    func seedsAreCurrent(target name: String) throws {
        let expected = Dictionary(SeedCorpus.seeds(for: name).map { (SeedCorpus.fileName($0), $0) }, uniquingKeysWith: { first, _ in first })
        #expect(!expected.isEmpty)
        if ProcessInfo.processInfo.environment["CONDUIT_FUZZ_WRITE_SEEDS"] == "1" {
            let directory = Self.fuzzDirectory.appendingPathComponent("corpus").appendingPathComponent(name)
            try? FileManager.default.removeItem(at: directory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (file, bytes) in expected { try Data(bytes).write(to: directory.appendingPathComponent(file)) }
        }
        let committed = Dictionary(try Self.inputs("corpus", name).map { ($0.name, $0.bytes) }, uniquingKeysWith: { first, _ in first })
        #expect(committed == expected, "Fuzz/corpus/\(name) differs from SeedCorpus: run the suite with CONDUIT_FUZZ_WRITE_SEEDS=1")
    }

    @Test("every seed is accepted by its parser, so fuzzing starts past the first checks", arguments: FuzzTargets.all.map(\.name))
    func seedsAreAccepted(target name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        for seed in SeedCorpus.seeds(for: name) {
            #expect(try target.run(seed), "\(name) refuses its seed \(SeedCorpus.fileName(seed))")
        }
    }

    @Test("every corpus directory belongs to a target of this build or one its traits left out")
    func corpusDirectoriesHaveTargets() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fuzzDirectory.appendingPathComponent("corpus").path)
        let known = Set(FuzzTargets.all.map(\.name) + FuzzTargets.leftOutByTraits)
        #expect(Set(names).subtracting(known).isEmpty)
    }
}
