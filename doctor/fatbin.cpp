// The architectures compiled into an ELF file's CUDA fatbins, read from its
// .nv_fatbin section without the toolkit (cuobjdump --list-elf/--list-ptx
// gives the same list). A fatbin container is a 16-byte header (magic
// 0xBA55ED50, version, header size, size of what follows) and a run of
// entries; each entry's header has its kind (1 PTX, 2 ELF, i.e. SASS) at
// offset 0, its header size at 4, its padded payload size at 8 and the sm
// version at 28. Only these headers are read, never the payloads, so a
// 1.5 GB libtorch_cuda.so takes a few thousand small reads.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "fatbin.h"

namespace cudabench::doctor {
namespace {

template <typename T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool read_at(std::ifstream& f, std::uint64_t off, char* buf, std::size_t n) {
  f.clear();
  f.seekg(static_cast<std::streamoff>(off));
  return f.read(buf, static_cast<std::streamsize>(n)) && static_cast<std::size_t>(f.gcount()) == n;
}

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;

}  // namespace

env::FatbinArchs read_fatbin_archs(const std::string& path) {
  env::FatbinArchs out;
  out.file = path;
  std::ifstream f(path, std::ios::binary);
  char eh[64] = {0};
  if (!f) {
    out.error = "cannot read " + path;
    return out;
  }
  f.read(eh, sizeof eh);
  const auto got = f.gcount();
  if (got < 6 || std::memcmp(eh, "\x7f" "ELF", 4) != 0 || eh[4] != 2 || eh[5] != 1) {
    out.error = path + " is not a 64-bit little-endian ELF file";
    return out;
  }
  if (got < static_cast<std::streamsize>(sizeof eh)) {
    out.error = path + ": truncated ELF header";
    return out;
  }
  const auto shoff = get<std::uint64_t>(eh + 0x28);
  const auto shentsize = get<std::uint16_t>(eh + 0x3a);
  const auto shnum = get<std::uint16_t>(eh + 0x3c);
  const auto shstrndx = get<std::uint16_t>(eh + 0x3e);
  f.clear();
  f.seekg(0, std::ios::end);
  const auto file_size = static_cast<std::uint64_t>(std::max<std::streamoff>(0, f.tellg()));
  if (shentsize < 64 || shnum == 0 || shstrndx >= shnum) {
    out.error = path + " has no section table";
    return out;
  }
  // Every size below is checked against the file before anything is
  // allocated or read: a corrupt header cannot ask for gigabytes.
  const std::uint64_t table_size = static_cast<std::uint64_t>(shentsize) * shnum;
  if (shoff > file_size || table_size > file_size - shoff) {
    out.error = path + ": truncated section table";
    return out;
  }
  std::string table(table_size, '\0');
  if (!read_at(f, shoff, table.data(), table.size())) {
    out.error = path + ": truncated section table";
    return out;
  }
  auto section = [&](int i, std::uint64_t* off, std::uint64_t* size) {
    const char* s = table.data() + static_cast<std::size_t>(i) * shentsize;
    *off = get<std::uint64_t>(s + 0x18);
    *size = get<std::uint64_t>(s + 0x20);
    return get<std::uint32_t>(s);  // name offset
  };
  std::uint64_t str_off = 0, str_size = 0;
  section(shstrndx, &str_off, &str_size);
  if (str_off > file_size || str_size > file_size - str_off) {
    out.error = path + ": truncated section names";
    return out;
  }
  if (str_size > (16u << 20)) str_size = 16u << 20;
  std::string names(str_size, '\0');
  if (!read_at(f, str_off, names.data(), names.size())) {
    out.error = path + ": truncated section names";
    return out;
  }
  std::uint64_t fat_off = 0, fat_size = 0;
  bool found = false;
  for (int i = 0; i < shnum && !found; ++i) {
    std::uint64_t off = 0, size = 0;
    const std::uint32_t name = section(i, &off, &size);
    if (name < names.size() && std::strcmp(names.c_str() + name, ".nv_fatbin") == 0) {
      fat_off = off;
      fat_size = size;
      found = true;
    }
  }
  if (!found) {
    out.error = path + " has no .nv_fatbin section (no CUDA kernels)";
    return out;
  }
  if (fat_off > file_size || fat_size > file_size - fat_off) {
    out.error = path + ": .nv_fatbin runs past the end of the file";
    return out;
  }
  const std::uint64_t end = fat_off + fat_size;
  std::uint64_t pos = fat_off;
  while (pos + 16 <= end) {
    char h[16];
    if (!read_at(f, pos, h, sizeof h)) break;
    if (get<std::uint32_t>(h) != kFatbinMagic) {
      pos += 8;  // containers are 8-byte aligned; skip padding
      continue;
    }
    const std::uint64_t header = get<std::uint16_t>(h + 6);
    const std::uint64_t body = get<std::uint64_t>(h + 8);
    if (header < 16 || body > end - pos) break;
    ++out.containers;
    std::map<int, int> sass, ptx;  // counted once per container
    for (std::uint64_t e = pos + header, stop = pos + header + body; e + 32 <= stop;) {
      char eh2[32];
      if (!read_at(f, e, eh2, sizeof eh2)) break;
      const auto kind = get<std::uint16_t>(eh2);
      const std::uint64_t ehs = get<std::uint32_t>(eh2 + 4);
      const std::uint64_t payload = get<std::uint32_t>(eh2 + 8);
      const int sm = static_cast<int>(get<std::uint32_t>(eh2 + 28));
      if (ehs < 32 || sm <= 0 || sm > 10000) break;
      if (kind == 2) sass[sm] = 1;
      if (kind == 1) ptx[sm] = 1;
      e += ehs + payload;
    }
    for (const auto& [sm, n] : sass) out.sass[sm] += n;
    for (const auto& [sm, n] : ptx) out.ptx[sm] += n;
    pos += header + body;
  }
  if (out.containers == 0) out.error = path + ": .nv_fatbin holds no fatbin container";
  return out;
}

}  // namespace cudabench::doctor
