import Foundation

/// Entry point of `capture-agent`. Capture and streaming arrive with the agent issue;
/// until then the binary says so plainly instead of pretending to work.
public enum CaptureAgentMain {
    public static func run(arguments: [String]) -> Never {
        let message = "capture-agent: capture and streaming are not in this build yet; " +
            "use `recordctl demo` for a local synthetic recording.\n"
        FileHandle.standardError.write(Data(message.utf8))
        exit(2)
    }
}
