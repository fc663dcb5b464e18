import ConduitCore
import ConduitUDP
import Foundation

extension UDPTransport.KeyReader {
    /// The command line's key reader: `srtp-key-file=PATH` reads the file (at most 4 KiB, one or
    /// two base64 keys), `srtp-key-env=VARIABLE` the process environment. The transport itself
    /// reads neither; the tool reads on its behalf, so keys never appear on a command line.
    static let filesAndEnvironment = UDPTransport.KeyReader { reference throws(ConduitError) in
        switch reference {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConduitError(.invalidConfiguration, "\(reference): cannot read the SRTP key file \(path)")
            }
            guard data.count <= 4_096 else {
                throw ConduitError(.invalidConfiguration, "\(reference): the SRTP key file \(path) is larger than a key")
            }
            return String(decoding: data, as: UTF8.self)
        case .environment(let variable):
            guard let value = ProcessInfo.processInfo.environment[variable] else {
                throw ConduitError(.invalidConfiguration, "\(reference): the environment has no \(variable)")
            }
            return value
        }
    }
}
