import ConduitCore
public import ConduitUDP
import Foundation

extension UDPTransport.KeyReader {
    /// For tests whose URLs name their SRTP keys (`srtp-key-file`, `srtp-key-env`): reads the
    /// file or the test process's environment, as the command-line tool's reader does.
    public static let testFilesAndEnvironment = UDPTransport.KeyReader { reference throws(ConduitError) in
        let text: String? = switch reference {
        case .file(let path): try? String(contentsOfFile: path, encoding: .utf8)
        case .environment(let variable): ProcessInfo.processInfo.environment[variable]
        }
        guard let text else { throw ConduitError(.invalidConfiguration, "\(reference): no such key file or variable") }
        return text
    }
}
