extension SegmentWriter {
    /// What an earlier file of the session holds: the sequence numbers and the ack point its
    /// fragments' markers name, each track's last decode time, and its `mcrs`. A resume
    /// needs them when the newest file never got its first fragment — the server stopped
    /// between opening that file at a split and its first write — because then the newest
    /// file says nothing about the session (``MP4Muxer/resume(configuration:)``).
    ///
    /// The file is fragmented (a crash left it) or finalized in place: finalizing keeps every
    /// fragment, markers included, inside the one `mdat` it puts over them, so they are read
    /// from there. A faststart rewrite keeps only sample bytes; such a file cannot answer.
    static func finishedState(path: String, tracks: [PreparedTrack]) throws(MuxerError) -> (ResumeState, RecordingInfoBox) {
        let file = try RandomAccessFile(path: path, mode: .readOnly)
        defer { file.close() }
        var scan = try MP4FileScanner.scan(file: file, progress: nil)
        if scan.isProgressive {
            guard scan.boxes.count >= 2, scan.boxes[1].type == "mdat", scan.boxes[1].offset == placeholderOffset else {
                throw MuxerError(.notOurFile, "\(path) is not laid out as finalized in place (a faststart rewrite?): "
                                 + "its fragments' sequence markers are gone, so a resume cannot know what it holds")
            }
            let mdat = scan.boxes[1]
            scan = try MP4FileScanner.scan(file: file, progress: nil, region: mdat.offset + 16 ..< mdat.offset + mdat.size)
        }
        guard let info = scan.movie?.userData?.recordingInfo, !scan.fragments.isEmpty else {
            throw MuxerError(.notOurFile, "\(path) has no fragment of ours to say what it holds")
        }
        let tables = try FragmentTables(fragments: scan.fragments, tracks: tracks)
        let state = ResumeState(sequences: tables.sequences, durable: tables.durable,
                                lastDTS: lastDecodeTimes(tables.tables, tracks: tracks, info: info), bytesDiscarded: 0)
        return (state, info)
    }
}
