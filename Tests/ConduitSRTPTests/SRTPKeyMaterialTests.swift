#if SRTP
import ConduitCore
import ConduitSRTP
import Foundation
import Testing

@Suite("SRTP profiles and key material")
struct SRTPKeyMaterialTests {
    @Test("Profiles by name, with their key and salt lengths")
    func profiles() {
        #expect(SRTPProfile(name: "aes-cm-128-hmac-sha1-80") == .aesCM128HmacSha1_80)
        #expect(SRTPProfile(name: "aes-cm-128-hmac-sha1-32") == .aesCM128HmacSha1_32)
        #expect(SRTPProfile(name: "aead-aes-128-gcm") == .aeadAES128GCM)
        #expect(SRTPProfile(name: "AEAD-AES-128-GCM") == .aeadAES128GCM)
        #expect(SRTPProfile(name: "aes-cm-256-hmac-sha1-80") == nil)
        #expect(SRTPProfile(name: "") == nil)
        #expect(SRTPProfile.default == .aesCM128HmacSha1_80)
        for profile in SRTPProfile.allCases { #expect(SRTPProfile(name: profile.name) == profile) }
        #expect(SRTPProfile.aesCM128HmacSha1_80.keyMaterialLength == 30)
        #expect(SRTPProfile.aesCM128HmacSha1_32.keyMaterialLength == 30)
        #expect(SRTPProfile.aeadAES128GCM.masterSaltLength == 12)
        #expect(SRTPProfile.aeadAES128GCM.keyMaterialLength == 28)
    }

    @Test("Wrong key or salt lengths are typed errors")
    func badLengths() {
        let cases: [(SRTPProfile, Int, Int)] = [
            (.aesCM128HmacSha1_80, 15, 14), (.aesCM128HmacSha1_80, 16, 12), (.aesCM128HmacSha1_32, 32, 14),
            (.aeadAES128GCM, 16, 14), (.aeadAES128GCM, 0, 0),
        ]
        for (profile, key, salt) in cases {
            let error = #expect(throws: ConduitError.self) {
                _ = try SRTPKeyMaterial(
                    profile: profile, masterKey: [UInt8](repeating: 1, count: key),
                    masterSalt: [UInt8](repeating: 2, count: salt))
            }
            #expect(error?.code == .invalidConfiguration)
        }
        for length in [0, 29, 31, 46] {
            let error = #expect(throws: ConduitError.self) {
                _ = try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, keyAndSalt: [UInt8](repeating: 0, count: length))
            }
            #expect(error?.code == .invalidConfiguration)
        }
        #expect(throws: ConduitError.self) {
            _ = try SRTPKeyMaterial(profile: .aeadAES128GCM, keyAndSalt: LibSRTPVectors.testKey)
        }
    }

    @Test("Base64 (SDES inline) round trip, with the inline: prefix and a lifetime")
    func base64() throws {
        let material = try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, keyAndSalt: LibSRTPVectors.testKey)
        let text = material.base64
        #expect(text.count == 40)
        #expect(try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, base64: text) == material)
        #expect(try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, base64: " \(text)\n") == material)
        #expect(try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, base64: "inline:\(text)|2^31") == material)
        #expect(material.masterKey == Array(LibSRTPVectors.testKey.prefix(16)))
        #expect(material.masterSalt == Array(LibSRTPVectors.testKey.suffix(14)))
        // Agrees with Foundation's encoder.
        #expect(text == Data(LibSRTPVectors.testKey).base64EncodedString())
        let gcm = try SRTPKeyMaterial(profile: .aeadAES128GCM, keyAndSalt: LibSRTPVectors.testKeyGCM)
        #expect(gcm.base64 == Data(LibSRTPVectors.testKeyGCM).base64EncodedString())
        #expect(try SRTPKeyMaterial(profile: .aeadAES128GCM, base64: gcm.base64) == gcm)
        // The description does not show the key.
        #expect(!material.description.contains(text))
    }

    @Test("Bad base64, or base64 of the wrong length, is a typed error")
    func badBase64() throws {
        let good = try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, keyAndSalt: LibSRTPVectors.testKey).base64
        let bad = [
            "", "!!!!", "abc", String(good.dropLast()), good + "=", "=" + good.dropFirst(),
            good.replacingOccurrences(of: "4", with: "*"), "inline:\(good)|2^20|1:4",
            Data([UInt8](repeating: 7, count: 29)).base64EncodedString(),
            Data([UInt8](repeating: 7, count: 31)).base64EncodedString(),
            "AB==",  // unused bits set
        ]
        for text in bad {
            let error = #expect(throws: ConduitError.self, "\(text)") {
                _ = try SRTPKeyMaterial(profile: .aesCM128HmacSha1_80, base64: text)
            }
            #expect(error?.code == .invalidConfiguration)
        }
    }

    @Test("Key material from a file of base64 text")
    func file() throws {
        let material = try SRTPKeyMaterial(profile: .aeadAES128GCM, keyAndSalt: LibSRTPVectors.testKeyGCM)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-srtp-\(UUID().uuidString).key")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data((material.base64 + "\n").utf8).write(to: url)
        #expect(try SRTPKeyMaterial(profile: .aeadAES128GCM, contentsOfFile: url.path) == material)

        try Data("not a key\n".utf8).write(to: url)
        let garbage = #expect(throws: ConduitError.self) {
            _ = try SRTPKeyMaterial(profile: .aeadAES128GCM, contentsOfFile: url.path)
        }
        #expect(garbage?.code == .invalidConfiguration)

        let missing = #expect(throws: ConduitError.self) {
            _ = try SRTPKeyMaterial(profile: .aeadAES128GCM, contentsOfFile: url.path + ".missing")
        }
        #expect(missing?.code == .invalidConfiguration)
    }
}
#endif
