@testable import RecordServerCore
import Metrics
import Shared
import Testing

/// The value of one series (`name` or `name{labels}`) in a Prometheus text page, nil if absent.
func seriesValue(_ series: String, in page: String) -> Double? {
    for line in page.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1))
    }
    return nil
}

@Suite("Server metrics")
struct MetricsTests {
    @Test func everyFamilyIsExposedFromTheStart() {
        let page = ServerMetrics().exposition()
        let families = [
            ServerMetrics.Name.connectionsOpen, ServerMetrics.Name.connectionsAccepted, ServerMetrics.Name.connectionsRefused,
            ServerMetrics.Name.sessionsLive, ServerMetrics.Name.sessionsStarted, ServerMetrics.Name.sessionsEnded,
            ServerMetrics.Name.ingestedBytes, ServerMetrics.Name.ingestedSamples, ServerMetrics.Name.fragmentsWritten,
            ServerMetrics.Name.fragmentBytesWritten, ServerMetrics.Name.acksSent, ServerMetrics.Name.protocolErrors,
            ServerMetrics.Name.duplicateSamplesIgnored, ServerMetrics.Name.fragmentWriteSeconds,
            ServerMetrics.Name.fsyncSeconds, ServerMetrics.Name.queueBytes,
        ]
        for family in families {
            #expect(page.contains("# TYPE \(family) "), "\(family) missing")
            #expect(page.contains("# HELP \(family) "), "\(family) has no help")
        }
        #expect(seriesValue(#"recordserver_sessions_ended_total{outcome="interrupted"}"#, in: page) == 0)
        #expect(seriesValue(#"recordserver_protocol_errors_total{code="sequenceGap"}"#, in: page) == 0)
        #expect(seriesValue(#"recordserver_connections_refused_total{reason="authentication"}"#, in: page) == 0)
        #expect(page.contains("# TYPE recordserver_fsync_seconds histogram"))
        #expect(page.contains("# TYPE recordserver_connections_open gauge"))
        #expect(page.contains("# TYPE recordserver_acks_sent_total counter"))
    }

    @Test func connectionsAndSessions() {
        let metrics = ServerMetrics()
        metrics.connectionOpened()
        metrics.connectionOpened()
        metrics.connectionClosed()
        metrics.connectionRefused(reason: "authentication")
        metrics.connectionRefused(reason: "TLS handshake!")
        metrics.sessionStarted()
        metrics.sessionStarted()
        metrics.sessionEnded(outcome: .completed)

        let page = metrics.exposition()
        #expect(seriesValue("recordserver_connections_open", in: page) == 1)
        #expect(seriesValue("recordserver_connections_accepted_total", in: page) == 2)
        #expect(seriesValue(#"recordserver_connections_refused_total{reason="authentication"}"#, in: page) == 1)
        // Free-form reasons are reduced to a safe label value.
        #expect(seriesValue(#"recordserver_connections_refused_total{reason="tls_handshake_"}"#, in: page) == 1)
        #expect(seriesValue("recordserver_sessions_live", in: page) == 1)
        #expect(seriesValue("recordserver_sessions_started_total", in: page) == 2)
        #expect(seriesValue(#"recordserver_sessions_ended_total{outcome="completed"}"#, in: page) == 1)
        #expect(seriesValue(#"recordserver_sessions_ended_total{outcome="failed"}"#, in: page) == 0)
    }

    @Test func mediaCountersByKind() {
        let metrics = ServerMetrics()
        metrics.sampleIngested(kind: "video", bytes: 1000)
        metrics.sampleIngested(kind: "video", bytes: 500)
        metrics.sampleIngested(kind: "audio", bytes: 80)
        metrics.sampleIngested(kind: "subtitles", bytes: 7)
        metrics.fragmentWritten(bytes: 4096, write: .milliseconds(2), sync: .milliseconds(5))
        metrics.ackSent()
        metrics.duplicateIgnored()
        metrics.duplicateIgnored()

        let page = metrics.exposition()
        #expect(seriesValue(#"recordserver_ingested_bytes_total{kind="video"}"#, in: page) == 1500)
        #expect(seriesValue(#"recordserver_ingested_samples_total{kind="video"}"#, in: page) == 2)
        #expect(seriesValue(#"recordserver_ingested_bytes_total{kind="audio"}"#, in: page) == 80)
        #expect(seriesValue(#"recordserver_ingested_samples_total{kind="audio"}"#, in: page) == 1)
        #expect(seriesValue(#"recordserver_ingested_bytes_total{kind="other"}"#, in: page) == 7)
        #expect(seriesValue("recordserver_fragments_written_total", in: page) == 1)
        #expect(seriesValue("recordserver_fragment_bytes_written_total", in: page) == 4096)
        #expect(seriesValue("recordserver_acks_sent_total", in: page) == 1)
        #expect(seriesValue("recordserver_duplicate_samples_ignored_total", in: page) == 2)
    }

    @Test func errorsByProtocolCode() {
        let metrics = ServerMetrics()
        metrics.error(code: .storageFailure)
        metrics.error(code: .storageFailure)
        metrics.error(code: .authenticationFailed)
        metrics.error(code: ProtocolError.Code(rawValue: 0x7777))
        metrics.error(code: ProtocolError.Code(rawValue: 0x7778))

        let page = metrics.exposition()
        #expect(seriesValue(#"recordserver_protocol_errors_total{code="storageFailure"}"#, in: page) == 2)
        #expect(seriesValue(#"recordserver_protocol_errors_total{code="authenticationFailed"}"#, in: page) == 1)
        // Codes a peer invents share one series.
        #expect(seriesValue(#"recordserver_protocol_errors_total{code="unknown"}"#, in: page) == 2)
        #expect(ServerMetrics.codeLabel(.idleTimeout) == "idleTimeout")
    }

    @Test func latencyHistogramsAndQueueGauge() {
        let metrics = ServerMetrics()
        metrics.recordFsync(.milliseconds(3))
        metrics.recordFsync(.milliseconds(30))
        metrics.recordFragmentWrite(.microseconds(200))
        metrics.setQueueBytes(65_536)

        let page = metrics.exposition()
        #expect(seriesValue("recordserver_fsync_seconds_count", in: page) == 2)
        #expect(seriesValue(#"recordserver_fsync_seconds_bucket{le="0.005"}"#, in: page) == 1)
        #expect(seriesValue(#"recordserver_fsync_seconds_bucket{le="0.05"}"#, in: page) == 2)
        let sum = seriesValue("recordserver_fsync_seconds_sum", in: page) ?? .nan
        #expect(abs(sum - 0.033) < 1e-9)
        #expect(seriesValue("recordserver_fragment_write_seconds_count", in: page) == 1)
        #expect(seriesValue(#"recordserver_fragment_write_seconds_bucket{le="0.00025"}"#, in: page) == 1)
        #expect(seriesValue("recordserver_queue_bytes", in: page) == 65_536)

        // Sessions report changes; the gauge is their sum.
        metrics.queueBytesChanged(by: 1_000)
        metrics.queueBytesChanged(by: -65_536)
        metrics.queueBytesChanged(by: 0)
        #expect(seriesValue("recordserver_queue_bytes", in: metrics.exposition()) == 1_000)
    }

    @Test func instancesAreIndependent() {
        // No global MetricsSystem: two servers in one process must not see each other's figures.
        let first = ServerMetrics()
        let second = ServerMetrics()
        first.ackSent()
        #expect(seriesValue("recordserver_acks_sent_total", in: first.exposition()) == 1)
        #expect(seriesValue("recordserver_acks_sent_total", in: second.exposition()) == 0)
    }

    @Test func factoryWritesIntoTheSameRegistry() {
        // Code that makes its own swift-metrics handles through `factory` shows up on the same page.
        let metrics = ServerMetrics()
        let counter = Metrics.Counter(label: "recordserver_custom_total", factory: metrics.factory)
        counter.increment(by: 3)
        #expect(seriesValue("recordserver_custom_total", in: metrics.exposition()) == 3)
    }

    @Test func durationConversion() {
        #expect(Duration.seconds(2).nanoseconds == 2_000_000_000)
        #expect(Duration.microseconds(1).nanoseconds == 1_000)
        #expect(Duration.seconds(Int64.max).nanoseconds == .max)
        // Sub-second parts count (an idle timeout of 2.5 s was announced as 2000 ms).
        #expect(Duration.milliseconds(2500).wireMilliseconds == 2500)
        #expect(Duration.microseconds(1500).milliseconds == 1.5)
        #expect(Duration.seconds(Int64.max).wireMilliseconds == .max)
        #expect(Duration.seconds(-1).wireMilliseconds == 0)
        #expect(ServerMetrics.sanitizedLabel("") == "unspecified")
        #expect(ServerMetrics.sanitizedLabel(String(repeating: "x", count: 100)).count == 32)
    }
}
