/// Rewrites a finalized file with `moov` before `mdat` ("faststart", for progressive web
/// playback). Only sample bytes are copied — chunk by chunk, in file order — and every chunk
/// offset is recomputed. Written to a temporary name, fsynced, then renamed over the original.
enum Faststart {
    static func rewrite(path: String, tracks: [PreparedTrack], tables: [TrackTable], info: RecordingInfoBox,
                        creationTime: Int64, fileMode: UInt32) throws(MuxerError) {
        struct Chunk { var track: Int; var index: Int; var offset: UInt64; var size: UInt64 }
        var chunks: [Chunk] = []
        for (t, table) in tables.enumerated() {
            var sample = 0
            for (c, offset) in table.chunkOffsets.enumerated() {
                let n = Int(table.samplesPerChunk[c])
                let size = table.sizes[sample..<sample + n].reduce(UInt64(0)) { $0 + UInt64($1) }
                chunks.append(Chunk(track: t, index: c, offset: offset, size: size))
                sample += n
            }
        }
        chunks.sort { $0.offset < $1.offset }
        // Compact layout: chunk offsets relative to the start of the mdat payload.
        var compact = tables
        var position: UInt64 = 0
        for chunk in chunks {
            compact[chunk.track].chunkOffsets[chunk.index] = position
            position += chunk.size
        }
        // The moov's size depends on its offsets (stco vs co64): iterate until it settles.
        let head = UInt64(FileTypeBox.progressive.size)
        var moovSize = 0
        var moov: [UInt8] = []
        repeat {
            moovSize = moov.count
            let shift = Int64(head) + Int64(moovSize) + 16
            moov = MovieBuilder.finalMovie(tracks: tracks, tables: compact, creationTime: creationTime, info: info, offsetShift: shift).encoded()
        } while moov.count != moovSize

        let temporary = path + ".faststart.tmp"
        RandomAccessFile.remove(temporary)
        let source = try RandomAccessFile(path: path, mode: .readOnly)
        let target = try RandomAccessFile(path: temporary, mode: .createNew(mode: fileMode))
        do throws(MuxerError) {
            var w = ByteWriter(capacity: moov.count + 64)
            FileTypeBox.progressive.encode(into: &w)
            w.append(moov)
            MediaDataHeader(payloadSize: position, forceLarge: true).encode(into: &w)
            try target.write(w.bytes, at: 0)
            var out = UInt64(w.count)
            for chunk in chunks {
                var done: UInt64 = 0
                while done < chunk.size {
                    let n = Int(min(chunk.size - done, 4 << 20))
                    let bytes = try source.read(count: n, at: chunk.offset + done)
                    guard bytes.count == n else { throw MuxerError(.io, "\(path) ended inside a chunk at \(chunk.offset + done)") }
                    try target.write(bytes, at: out)
                    out += UInt64(n)
                    done += UInt64(n)
                }
            }
            try target.sync()
            target.close()
            try RandomAccessFile.rename(temporary, to: path)
            RandomAccessFile.syncDirectory(of: path)
        } catch {
            target.close()
            RandomAccessFile.remove(temporary)
            throw error
        }
    }
}
