import Foundation
import Logging
import Testing
import WireProtocol
@testable import CaptureAgentCore

@Suite("V4L2 capture logic against a scripted device")
struct V4L2CaptureTests {
    let yu12 = V4L2PixelFormat.yuv420

    func makeSource(_ device: ScriptedV4L2Device, request: V4L2CaptureSource.Request = .init(width: 64, height: 48, fps: 30),
                    clock: ManualClock = ManualClock(start: 5_000_000_000)) -> V4L2CaptureSource {
        V4L2CaptureSource(path: "/dev/video9", request: request, clock: clock, openDevice: { _ throws(V4L2Error) in device })
    }

    @Test func negotiatesInOrderAndReportsWhatWasGranted() throws {
        let device = ScriptedV4L2Device()
        let source = makeSource(device)
        try source.start()
        #expect(device.calls == [
            "QUERYCAP", "S_FMT 64x48 YU12", "S_PARM 30/1", "REQBUFS 4",
            "MMAP 0", "QBUF 0", "MMAP 1", "QBUF 1", "MMAP 2", "QBUF 2", "MMAP 3", "QBUF 3", "STREAMON",
        ])
        #expect(source.format == .video(width: 64, height: 48, fpsNumerator: 30, fpsDenominator: 1))
        let granted = try #require(source.granted)
        #expect(granted.bufferCount == 4)
        #expect(granted.description.contains("64x48 YU12 @ 30 fps"))
        source.stop()
    }

    @Test func aDeviceGrantingAnotherSizeAndRateIsReportedAndUsed() throws {
        let device = ScriptedV4L2Device()
        // Asked for 1280x720@30, the camera can only do 640x480 with padded lines at 15 fps.
        device.grantedFormat = V4L2PixelFormat(width: 640, height: 480, pixelFormat: yu12, bytesPerLine: 704)
        device.grantedRate = (15, 1)
        let source = makeSource(device, request: .init(width: 1280, height: 720, fps: 30))
        try source.start()
        #expect(source.format == .video(width: 640, height: 480, fpsNumerator: 15, fpsDenominator: 1))
        #expect(source.granted?.bytesPerLine == 704)
        #expect(source.granted?.description.contains("640x480 YU12 @ 15 fps") == true)

        device.script = [.frame(sequence: 0, flags: 0x2000, seconds: 10, microseconds: 0, luma: 77)]
        guard case .video(let frame, _)? = try source.read() else { Issue.record("no frame"); return }
        #expect(frame.width == 640 && frame.height == 480)
        // The stride padding (0xEE) must not leak into the picture.
        #expect(frame.y.allSatisfy { $0 == 77 })
        #expect(frame.u.allSatisfy { $0 == 128 } && frame.v.allSatisfy { $0 == 128 })
        source.stop()
    }

    @Test func aChosenDeviceFormatIsCapturedAndConvertedByLibv4lconvert() throws {
        let device = ScriptedV4L2Device()
        let yuyv = V4L2PixelFormat.yuyv
        device.grantedFormat = V4L2PixelFormat(width: 64, height: 48, pixelFormat: yuyv, bytesPerLine: 128)
        let source = makeSource(device, request: .init(width: 64, height: 48, fps: 30, deviceFormat: yuyv))
        try source.start()
        #expect(device.calls.contains("S_FMT 64x48 YUYV"))
        let granted = try #require(source.granted)
        #expect(granted.convertedHere)
        #expect(granted.description.contains("64x48 YUYV → YU12 (libv4lconvert) @ 30 fps"))

        device.script = [.frame(sequence: 0, flags: 0x2000, seconds: 10, microseconds: 0, luma: 91)]
        guard case .video(let frame, let pts)? = try source.read() else { Issue.record("no frame"); return }
        #expect(device.calls.contains { $0.hasPrefix("CONVERT YUYV ") })
        #expect(frame.width == 64 && frame.height == 48)
        #expect(frame.y.allSatisfy { $0 == 91 } && frame.u.allSatisfy { $0 == 128 })
        #expect(pts == 10_000_000_000)
        source.stop()
    }

    @Test func unconvertibleFramesAreDroppedThenTheCameraIsGivenUp() throws {
        let device = ScriptedV4L2Device()
        let mjpeg = V4L2PixelFormat.mjpeg
        let source = makeSource(device, request: .init(width: 64, height: 48, fps: 30, deviceFormat: mjpeg))
        try source.start()
        // Two corrupt frames are dropped and counted; the third converts.
        device.failingConversions = 2
        device.script = (0..<3).map { .frame(sequence: UInt32($0), flags: 0x2000, seconds: 10, microseconds: Int64($0) * 33_000, luma: 60) }
        guard case .video? = try source.read() else { Issue.record("no frame"); return }
        #expect(source.takeLostCount() == 2)
        // A camera whose every frame fails is given up with the converter's reason.
        let limit = V4L2CaptureSource.conversionFailureLimit
        device.failingConversions = limit
        device.script = (0..<limit).map { .frame(sequence: UInt32(3 + $0), flags: 0x2000, seconds: 11, microseconds: Int64($0) * 33_000, luma: 60) }
        let error = #expect(throws: CaptureError.self) { try source.read() }
        #expect(error?.message.contains("could not be converted") == true)
        #expect(error?.message.contains("corrupt frame") == true)
        source.stop()
    }

    @Test func aDeviceRefusingTheChosenFormatIsNamedWithAHint() throws {
        let device = ScriptedV4L2Device()
        device.grantedFormat = V4L2PixelFormat(width: 64, height: 48, pixelFormat: V4L2PixelFormat.yuyv)
        let source = makeSource(device, request: .init(width: 64, height: 48, fps: 30, deviceFormat: V4L2PixelFormat.mjpeg))
        let error = #expect(throws: CaptureError.self) { try source.start() }
        #expect(error?.code == .negotiationFailed)
        #expect(error?.message.contains("asked for the device format MJPG, the device granted YUYV") == true)
        #expect(error?.message.contains("capture-agent devices") == true)
    }

    @Test func fourccsPrintLikeV4l2Ctl() {
        #expect(V4L2PixelFormat.fourccString(V4L2PixelFormat.yuyv) == "YUYV")
        // v4l2_fourcc_be('Y','1','6',' ') and ('X','R','1','5'): bit 31 marks big-endian.
        #expect(V4L2PixelFormat.fourccString(V4L2PixelFormat.fourcc("Y16 ") | 1 << 31) == "Y16 -BE")
        #expect(V4L2PixelFormat.fourccString(V4L2PixelFormat.fourcc("XR15") | 1 << 31) == "XR15-BE")
        #expect(V4L2PixelFormat.fourccString(0x0001_4142) == "BA..")
    }

    @Test func aDriverWithoutFrameRateControlKeepsTheRequestedRate() throws {
        let device = ScriptedV4L2Device()
        device.grantedRate = nil
        let source = makeSource(device, request: .init(width: 64, height: 48, fps: 25))
        try source.start()
        #expect(source.format == .video(width: 64, height: 48, fpsNumerator: 25, fpsDenominator: 1))
        #expect(source.granted?.frameRateSet == false)
        #expect(source.granted?.description.contains("assumed") == true)
    }

    @Test func refusesDevicesThatCannotStreamOrConvert() throws {
        let noStreaming = ScriptedV4L2Device()
        noStreaming.capabilities = V4L2Capabilities(driver: "d", card: "Reader Only", busInfo: "", capabilities: 0x8000_0001, deviceCaps: 0x1)
        let error1 = #expect(throws: CaptureError.self) { try makeSource(noStreaming).start() }
        #expect(error1?.code == .unsupported)
        #expect(error1?.message.contains("not a streaming video capture device") == true)
        #expect(noStreaming.calls.last == "CLOSE")

        let wrongFormat = ScriptedV4L2Device()
        wrongFormat.grantedFormat = V4L2PixelFormat(width: 64, height: 48, pixelFormat: V4L2PixelFormat.fourcc("H264"))
        let error2 = #expect(throws: CaptureError.self) { try makeSource(wrongFormat).start() }
        #expect(error2?.code == .negotiationFailed)
        #expect(error2?.message.contains("H264") == true)

        let oneBuffer = ScriptedV4L2Device()
        oneBuffer.grantedBuffers = 1
        let error3 = #expect(throws: CaptureError.self) { try makeSource(oneBuffer).start() }
        #expect(error3?.code == .negotiationFailed)
    }

    @Test func everyDequeuedBufferIsRequeuedAtOnceInDequeueOrder() throws {
        let device = ScriptedV4L2Device()
        let source = makeSource(device)
        try source.start()
        device.script = [
            .frameAt(index: 2, sequence: 0, flags: 0x2000, seconds: 1, microseconds: 0, luma: 20),
            .frameAt(index: 0, sequence: 1, flags: 0x2000, seconds: 1, microseconds: 33_333, luma: 21),
            .frameAt(index: 3, sequence: 2, flags: 0x2000, seconds: 1, microseconds: 66_666, luma: 22),
        ]
        var lumas: [UInt8] = []
        for _ in 0..<3 {
            if case .video(let f, _)? = try source.read() { lumas.append(f.y[0]) }
        }
        #expect(lumas == [20, 21, 22])
        let afterStart = device.calls.drop { $0 != "STREAMON" }.dropFirst()
        #expect(Array(afterStart) == ["DQBUF 2", "QBUF 2", "DQBUF 0", "QBUF 0", "DQBUF 3", "QBUF 3"])
    }

    @Test func monotonicBufferTimestampsAreUsedOtherwiseTheClockAtDequeue() throws {
        let device = ScriptedV4L2Device()
        let clock = ManualClock(start: 7_000_000_000)
        let source = makeSource(device, clock: clock)
        try source.start()
        device.script = [
            // TIMESTAMP_MONOTONIC (+ SOE, as uvcvideo sets it): the buffer's own time.
            .frame(sequence: 0, flags: 0x2000 | 0x10000, seconds: 12, microseconds: 345_678, luma: 1),
            // TIMESTAMP_UNKNOWN: stamped with the clock when dequeued.
            .frame(sequence: 1, flags: 0x0000, seconds: 99, microseconds: 0, luma: 1),
            // TIMESTAMP_COPY: not a capture time either.
            .frame(sequence: 2, flags: 0x4000, seconds: 99, microseconds: 0, luma: 1),
        ]
        #expect(try source.read()?.pts == 12_345_678_000)
        clock.set(20_000_000_000)
        #expect(try source.read()?.pts == 20_000_000_000)
        clock.set(20_040_000_000)
        #expect(try source.read()?.pts == 20_040_000_000)
    }

    @Test func sequenceGapsAndCorruptedBuffersCountAsLostFrames() throws {
        let device = ScriptedV4L2Device()
        let source = makeSource(device)
        try source.start()
        device.script = [
            .frame(sequence: 10, flags: 0x2000, seconds: 1, microseconds: 0, luma: 1),
            .frame(sequence: 14, flags: 0x2000, seconds: 1, microseconds: 133_000, luma: 1),  // 11, 12, 13 lost
            .frame(sequence: 15, flags: 0x2000 | 0x40, seconds: 1, microseconds: 166_000, luma: 1),  // ERROR flag
            .timeout,
            .frame(sequence: 16, flags: 0x2000, seconds: 1, microseconds: 200_000, luma: 1),
        ]
        _ = try source.read()
        #expect(source.takeLostCount() == 0)
        _ = try source.read()
        #expect(source.takeLostCount() == 3)
        #expect(try source.read()?.pts == 1_200_000_000)
        #expect(source.takeLostCount() == 1)
        #expect(device.queued.count == 4)  // nothing leaked: every buffer is back with the driver
    }

    @Test func unpluggedMidStreamEndsTheSourceWithAClearError() throws {
        let device = ScriptedV4L2Device()
        let source = makeSource(device)
        try source.start()
        device.script = [
            .frame(sequence: 0, flags: 0x2000, seconds: 1, microseconds: 0, luma: 1),
            .fail(ENODEV),
        ]
        _ = try source.read()
        let error = #expect(throws: CaptureError.self) { try source.read() }
        #expect(error?.code == .deviceLost)
        #expect(error?.message.contains("ENODEV") == true)
        #expect(error?.message.contains("/dev/video9") == true)
    }

    @Test func unpluggedMidStreamEndsTheTrackWithAnErrorThroughThePipeline() throws {
        let device = ScriptedV4L2Device()
        let source = makeSource(device)
        try source.start()
        device.script = [
            .frame(sequence: 0, flags: 0x2000, seconds: 1, microseconds: 0, luma: 1),
            .frame(sequence: 1, flags: 0x2000, seconds: 1, microseconds: 33_333, luma: 1),
            .fail(ENODEV),
        ]
        let sink = RecordingSink()
        let pipeline = SourcePipeline(track: 4, label: "front", source: source, encoder: PassThroughEncoder(track: 4),
                                      queueCapacity: 8, sink: sink, logger: Logger(label: "test"))
        pipeline.run()
        pipeline.waitUntilFinished()
        let events = sink.events
        #expect(events.count == 3)
        #expect(events.prefix(2) == [.sample(track: 4, pts: 1_000_000_000, keyframe: true), .sample(track: 4, pts: 1_033_333_000, keyframe: true)])
        guard case .ended(4, .error, let message)? = events.last else {
            Issue.record("expected TrackEnd(error), got \(String(describing: events.last))")
            return
        }
        #expect(message.contains("device disappeared"))
        // The device was released on the way out.
        #expect(Array(device.calls.suffix(7)) == ["STREAMOFF", "MUNMAP 0", "MUNMAP 1", "MUNMAP 2", "MUNMAP 3", "REQBUFS 0", "CLOSE"])
    }

    @Test func stopReleasesEverything() throws {
        let device = ScriptedV4L2Device()
        let source = makeSource(device)
        try source.start()
        source.stop()
        source.stop()
        #expect(Array(device.calls.suffix(7)) == ["STREAMOFF", "MUNMAP 0", "MUNMAP 1", "MUNMAP 2", "MUNMAP 3", "REQBUFS 0", "CLOSE"])
        #expect(try source.read()?.pts == nil)
    }
}
