-- Wireshark dissector for the unencrypted header fields of Brisk packets
-- (the wire format is described in docs/PROTOCOL.md, sections 2 and 3).
--
-- Long headers (Initial, Handshake, version negotiation) are found by
-- their version field on any UDP port; once a conversation carried one, its
-- short-header (1-RTT) packets are decoded too. "Decode As... BRISK" works
-- on a port as well. Everything after the packet number of a 1-RTT or
-- Handshake packet is encrypted and shown only as its length.

-- Bit fields are read with arithmetic, not bitwise operators: Wireshark
-- builds embed Lua 5.1 or 5.2 as well as 5.4.
local brisk = Proto("brisk", "Brisk transport")

local VERSION_1 = 0x42520001
local LONG_TYPES = { [0] = "Initial", [1] = "Handshake" }
local PATTERNS = { [1] = "IK", [2] = "XX" }

local f = {
  header_form = ProtoField.string("brisk.header_form", "Header form"),
  packet_type = ProtoField.string("brisk.packet_type", "Packet type"),
  version = ProtoField.uint32("brisk.version", "Version", base.HEX),
  dcid_len = ProtoField.uint8("brisk.dcid_len", "Destination connection ID length"),
  dcid = ProtoField.bytes("brisk.dcid", "Destination connection ID"),
  scid_len = ProtoField.uint8("brisk.scid_len", "Source connection ID length"),
  scid = ProtoField.bytes("brisk.scid", "Source connection ID"),
  length = ProtoField.uint32("brisk.length", "Length (packet number and payload)"),
  pn_len = ProtoField.uint8("brisk.pn_len", "Packet number length"),
  packet_number = ProtoField.uint32("brisk.packet_number", "Packet number (truncated)"),
  pattern = ProtoField.string("brisk.pattern", "Noise handshake pattern"),
  message_len = ProtoField.uint32("brisk.message_len", "Handshake message length"),
  payload_len = ProtoField.uint32("brisk.payload_len", "Protected payload length"),
  supported_version = ProtoField.uint32("brisk.supported_version", "Supported version", base.HEX),
}
brisk.fields = {
  f.header_form, f.packet_type, f.version, f.dcid_len, f.dcid, f.scid_len, f.scid,
  f.length, f.pn_len, f.packet_number, f.pattern, f.message_len, f.payload_len,
  f.supported_version,
}

local prefs = brisk.prefs
prefs.short_cid_len = Pref.uint("Short-header connection ID length", 8,
  "Length of the connection IDs the receivers issued (8 in Brisk's implementation)")

-- A QUIC-style variable-length integer at `offset`: value, bytes used.
local function varint(tvb, offset)
  if offset >= tvb:len() then return nil end
  local first = tvb(offset, 1):uint()
  local n = 2 ^ math.floor(first / 64)
  if offset + n > tvb:len() then return nil end
  local v = first % 64
  for i = 1, n - 1 do
    v = v * 256 + tvb(offset + i, 1):uint()
  end
  return v, n
end

local function truncated_pn(tvb, offset, len)
  local v = 0
  for i = 0, len - 1 do
    v = v * 256 + tvb(offset + i, 1):uint()
  end
  return v
end

-- One long-header packet at `offset`; returns where the next one starts.
local function long_packet(tvb, tree, offset)
  local first = tvb(offset, 1):uint()
  local version = tvb(offset + 1, 4):uint()
  local dcid_len = tvb(offset + 5, 1):uint()
  local scid_at = offset + 6 + dcid_len
  local scid_len = tvb(scid_at, 1):uint()
  local after_cids = scid_at + 1 + scid_len
  local name = version == 0 and "Version Negotiation" or LONG_TYPES[math.floor(first / 16) % 4] or "Reserved"
  local t = tree:add(brisk, tvb(offset), "Brisk " .. name)
  t:add(f.header_form, tvb(offset, 1), "long")
  t:add(f.packet_type, tvb(offset, 1), name)
  t:add(f.version, tvb(offset + 1, 4))
  t:add(f.dcid_len, tvb(offset + 5, 1))
  if dcid_len > 0 then t:add(f.dcid, tvb(offset + 6, dcid_len)) end
  t:add(f.scid_len, tvb(scid_at, 1))
  if scid_len > 0 then t:add(f.scid, tvb(scid_at + 1, scid_len)) end
  if version == 0 then
    for at = after_cids, tvb:len() - 4, 4 do
      t:add(f.supported_version, tvb(at, 4))
    end
    return tvb:len(), name
  end
  local length, n = varint(tvb, after_cids)
  if not length then return tvb:len(), name end
  t:add(f.length, tvb(after_cids, n), length)
  local pn_at = after_cids + n
  local pn_len = first % 4 + 1
  -- The packet's end as sent; a capture cut by its snap length may hold
  -- fewer bytes.
  local stop = pn_at + length
  local held = math.min(stop, tvb:len())
  if pn_at + pn_len > held then return stop, name end
  t:add(f.pn_len, tvb(offset, 1), pn_len)
  t:add(f.packet_number, tvb(pn_at, pn_len), truncated_pn(tvb, pn_at, pn_len))
  local body = pn_at + pn_len
  if name == "Initial" and body < held then
    local pattern = tvb(body, 1):uint()
    t:add(f.pattern, tvb(body, 1), PATTERNS[pattern] or string.format("unknown (%d)", pattern))
    local mlen, mn = varint(tvb, body + 1)
    if mlen then t:add(f.message_len, tvb(body + 1, mn), mlen) end
  elseif name == "Handshake" and body < held then
    t:add(f.payload_len, tvb(body, held - body), stop - body)
  end
  return stop, name
end

local function short_packet(tvb, tree, offset)
  local first = tvb(offset, 1):uint()
  local cid_len = prefs.short_cid_len
  local pn_len = first % 4 + 1
  local pn_at = offset + 1 + cid_len
  if pn_at + pn_len > tvb:len() then return end
  local t = tree:add(brisk, tvb(offset), "Brisk 1-RTT")
  t:add(f.header_form, tvb(offset, 1), "short")
  t:add(f.packet_type, tvb(offset, 1), "1-RTT")
  if cid_len > 0 then t:add(f.dcid, tvb(offset + 1, cid_len)) end
  t:add(f.pn_len, tvb(offset, 1), pn_len)
  t:add(f.packet_number, tvb(pn_at, pn_len), truncated_pn(tvb, pn_at, pn_len))
  local body = pn_at + pn_len
  -- A capture cut short by its snap length holds fewer bytes than the
  -- packet had: the reported length is the datagram's.
  if body < tvb:len() then
    t:add(f.payload_len, tvb(body), tvb:reported_len() - body)
  end
end

function brisk.dissector(tvb, pinfo, tree)
  if tvb:len() < 1 then return 0 end
  pinfo.cols.protocol = "BRISK"
  local offset, names = 0, {}
  while offset < tvb:len() do
    local first = tvb(offset, 1):uint()
    if math.floor(first / 64) % 2 == 0 then break end
    if first < 0x80 then
      short_packet(tvb, tree, offset)
      names[#names + 1] = "1-RTT"
      break
    end
    if offset + 7 > tvb:len() then break end
    local name
    offset, name = long_packet(tvb, tree, offset)
    names[#names + 1] = name
  end
  pinfo.cols.info = table.concat(names, ", ")
  return tvb:len()
end

-- A Brisk long header: the form and fixed bits, then version 1 or 0.
local function heuristic(tvb, pinfo, tree)
  if tvb:len() < 7 then return false end
  local first = tvb(0, 1):uint()
  if first < 0xc0 then return false end
  local version = tvb(1, 4):uint()
  if version ~= VERSION_1 and version ~= 0 then return false end
  -- Later short-header packets of this conversation are Brisk as well.
  pinfo.conversation = brisk
  brisk.dissector(tvb, pinfo, tree)
  return true
end

brisk:register_heuristic("udp", heuristic)
DissectorTable.get("udp.port"):add_for_decode_as(brisk)
