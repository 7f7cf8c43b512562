import CaptureAgentCore

CaptureAgentMain.run(arguments: Array(CommandLine.arguments.dropFirst()))
