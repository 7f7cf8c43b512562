import Foundation

/// Entry point of `record-server`. TLS ingest arrives with the server issue; until
/// then the binary says so plainly instead of pretending to work.
public enum RecordServerMain {
    public static func run(arguments: [String]) -> Never {
        let message = "record-server: network ingest is not in this build yet; " +
            "use `recordctl demo` for a local synthetic recording.\n"
        FileHandle.standardError.write(Data(message.utf8))
        exit(2)
    }
}
