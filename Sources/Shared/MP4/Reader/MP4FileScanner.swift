/// Walks a file's top-level boxes with positioned reads (files may exceed memory and 4 GiB),
/// loading only `ftyp`, `moov` and each `moof`. Stops cleanly at the first box that is cut
/// short or implausible and says where: that is the torn tail of a crashed recording.
public struct MP4FileScanner {
    public struct TopLevelBox: Equatable, Sendable {
        public var type: FourCC
        public var offset: UInt64
        public var size: UInt64
    }

    /// A `moof` and the `mdat` right after it, fully present and consistent.
    public struct Fragment: Sendable {
        public var moofOffset: UInt64
        public var moof: MovieFragmentBox
        public var mdatPayload: Range<UInt64>
        /// The sequence marker written just before the `moof`, when there is one.
        public var sequenceMarker: SequenceMarkerBox?
        public var end: UInt64 { mdatPayload.upperBound }
    }

    public struct Result: Sendable {
        public var fileSize: UInt64
        public var boxes: [TopLevelBox] = []
        public var fileType: FileTypeBox?
        /// The first `moov` (the init segment's in a fragmented file, the only one otherwise).
        public var movie: MovieBox?
        public var movieOffset: UInt64?
        public var fragments: [Fragment] = []
        /// Offset where readable structure ended, if bytes remain after it.
        public var tornAt: UInt64?
        public var tornReason: String?
        /// End of the last complete fragment (or of the init moov when there is none).
        public var endOfStructure: UInt64 = 0

        public var isFragmented: Bool { movie?.extends != nil }
        /// ftyp + 64-bit mdat right after it + a complete moov: our finalized (or ffmpeg's) layout.
        public var isProgressive: Bool { movie != nil && movie?.extends == nil }
    }

    static let maxMovieSize: UInt64 = 512 << 20
    static let maxFragmentHeaderSize: UInt64 = 64 << 20

    public static func scan(path: String, progress: ((UInt64, UInt64) -> Void)? = nil) throws(MuxerError) -> Result {
        let file = try RandomAccessFile(path: path, mode: .readOnly)
        return try scan(file: file, progress: progress)
    }

    /// `region` scans only those bytes, as if they were a file of their own: the fragments a
    /// finalized file of ours keeps inside its `mdat` (``SegmentWriter/finishedState(path:tracks:)``).
    static func scan(file: RandomAccessFile, progress: ((UInt64, UInt64) -> Void)?, region: Range<UInt64>? = nil) throws(MuxerError) -> Result {
        let size = if let region { region.upperBound } else { try file.size() }
        var result = Result(fileSize: size)
        var offset: UInt64 = region?.lowerBound ?? 0
        var pendingMoof: (offset: UInt64, box: MovieFragmentBox)?
        // Other muxers leave fields out of their runs that the movie's trex boxes give.
        var trackDefaults: [UInt32: TrackExtendsBox] = [:]
        var pendingMarker: (offset: UInt64, box: SequenceMarkerBox)?
        var lastReport: UInt64 = 0
        func torn(_ reason: String) {
            result.tornAt = offset
            result.tornReason = reason
        }
        while offset < size {
            if let progress, offset - lastReport >= 64 << 20 {
                progress(offset, size)
                lastReport = offset
            }
            guard size - offset >= 8 else { torn("\(size - offset) stray bytes at the end"); break }
            let head = try file.read(count: 16, at: offset)
            var r = ByteReader(head)
            let size32: UInt32
            let type: FourCC
            do {
                size32 = try r.u32()
                type = try r.fourCC()
            } catch { torn("unreadable box header"); break }
            var boxSize = UInt64(size32)
            var headerSize: UInt64 = 8
            if size32 == 1 {
                guard head.count == 16, let large = try? r.u64() else { torn("box '\(type)' cut inside its 64-bit size"); break }
                boxSize = large
                headerSize = 16
            } else if size32 == 0 {
                boxSize = size - offset
            }
            guard boxSize >= headerSize, isPlausible(type) else {
                torn("box '\(type)' with size \(boxSize) is not a valid box"); break
            }
            guard boxSize <= size - offset else {
                torn("box '\(type)' declares \(boxSize) bytes but only \(size - offset) remain"); break
            }
            result.boxes.append(TopLevelBox(type: type, offset: offset, size: boxSize))
            let payloadStart = offset + headerSize
            let payloadSize = boxSize - headerSize
            switch type {
            case FileTypeBox.boxType:
                guard payloadSize <= 1024, var p = Optional(ByteReader(try file.read(count: Int(payloadSize), at: payloadStart))),
                      let ftyp = try? FileTypeBox(payload: &p) else { torn("unreadable ftyp"); break }
                result.fileType = ftyp
            case MovieBox.boxType:
                if result.movie != nil {
                    // A second moov after fragments: a finalize that was interrupted. Not structure.
                    torn("a second moov (interrupted finalize)")
                    break
                }
                guard payloadSize <= maxMovieSize else { torn("moov of \(payloadSize) bytes exceeds the limit"); break }
                var p = ByteReader(try file.read(count: Int(payloadSize), at: payloadStart))
                do { result.movie = try MovieBox(payload: &p) } catch { torn("moov: \(error)"); break }
                for trex in result.movie?.extends?.trackExtends ?? [] { trackDefaults[trex.trackID] = trex }
                result.movieOffset = offset
                result.endOfStructure = offset + boxSize
            case MovieFragmentBox.boxType:
                guard payloadSize <= maxFragmentHeaderSize else { torn("moof of \(payloadSize) bytes exceeds the limit"); break }
                var p = ByteReader(try file.read(count: Int(payloadSize), at: payloadStart))
                do { pendingMoof = (offset, try MovieFragmentBox(payload: &p, trackDefaults: trackDefaults)) } catch { torn("moof: \(error)"); break }
            case "mdat":
                if let moof = pendingMoof {
                    let fragment = Fragment(moofOffset: moof.offset, moof: moof.box, mdatPayload: payloadStart..<offset + boxSize,
                                            sequenceMarker: pendingMarker?.box)
                    if let problem = validate(fragment) { offset = pendingMarker?.offset ?? moof.offset; torn(problem); break }
                    result.fragments.append(fragment)
                    result.endOfStructure = fragment.end
                    pendingMoof = nil
                    pendingMarker = nil
                }
            case FreeSpaceBox.boxType where payloadSize >= 16 && payloadSize <= 16 << 20:
                var p = ByteReader(try file.read(count: Int(payloadSize), at: payloadStart))
                do {
                    if let marker = try SequenceMarkerBox(freePayload: &p) { pendingMarker = (offset, marker) }
                } catch { torn("sequence marker: \(error)"); break }
            default:
                break
            }
            if result.tornAt != nil { break }
            if pendingMoof != nil, type != MovieFragmentBox.boxType {
                offset = pendingMarker?.offset ?? pendingMoof!.offset
                torn("moof not followed by its mdat")
                break
            }
            offset += boxSize
        }
        if result.tornAt == nil, let moof = pendingMoof {
            offset = pendingMarker?.offset ?? moof.offset
            torn("moof without its mdat")
        } else if result.tornAt == nil, let marker = pendingMarker {
            offset = marker.offset
            torn("sequence marker without its fragment")
        }
        progress?(size, size)
        return result
    }

    /// Every run must point inside the fragment's mdat, and the sequence marker may name no
    /// more samples than the fragment holds (a damaged range count would otherwise make
    /// ``SequenceMarkerBox/sequences`` expand to billions of numbers).
    static func validate(_ fragment: Fragment) -> String? {
        if let marker = fragment.sequenceMarker {
            let named = marker.ranges.reduce(UInt64(0)) { $0.saturatingSum(UInt64($1.count)) }
            let held = fragment.moof.trackFragments.reduce(UInt64(0)) { $0 + UInt64($1.run.samples.count) }
            guard named <= held else {
                return "the sequence marker of fragment \(fragment.moof.header.sequenceNumber) names \(named) samples, the fragment holds \(held)"
            }
        }
        for traf in fragment.moof.trackFragments {
            guard traf.header.flags & TrackFragmentHeaderBox.defaultBaseIsMoof != 0 || traf.header.baseDataOffset != nil else {
                return "traf without a data base"
            }
            // Saturating: a damaged base offset or run must be reported, not trap.
            let base = Int64(clamping: traf.header.baseDataOffset ?? fragment.moofOffset)
            let start = TimeScaling.sum(base, Int64(traf.run.dataOffset))
            let length = traf.run.samples.reduce(Int64(0)) { TimeScaling.sum($0, Int64($1.size)) }
            guard start >= Int64(clamping: fragment.mdatPayload.lowerBound),
                  TimeScaling.sum(start, length) <= Int64(clamping: fragment.mdatPayload.upperBound) else {
                return "fragment \(fragment.moof.header.sequenceNumber) points outside its mdat"
            }
        }
        return nil
    }

    /// Box types seen at the top level of MP4 files; anything else there means garbage.
    static func isPlausible(_ type: FourCC) -> Bool {
        let v = type.value
        return (0..<4).allSatisfy { i in
            let c = UInt8(truncatingIfNeeded: v >> (UInt32(i) * 8))
            return (c >= 0x20 && c < 0x7F) || c == 0xA9
        }
    }
}
