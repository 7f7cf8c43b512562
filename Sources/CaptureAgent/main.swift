import CaptureAgentCore

await CaptureAgentMain.main()
