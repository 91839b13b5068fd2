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

#include "env/elf.h"
#include "fatbin.h"

namespace cudabench::doctor {
namespace {

using env::elf_get;
using env::read_at;

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;

// Where the .nv_fatbin section is; "" or why there is none.
std::string find_fatbin(std::ifstream& f, const std::string& path, std::uint64_t* fat_off, std::uint64_t* fat_size) {
  env::ElfSections t;
  if (std::string why = env::read_elf_sections(f, path, &t); !why.empty()) return why;
  std::uint64_t str_off = 0, str_size = 0;
  t.section(t.names_index, &str_off, &str_size);
  if (!t.fits(str_off, str_size)) return path + ": truncated section names";
  if (str_size > (16u << 20)) str_size = 16u << 20;
  std::string names(str_size, '\0');
  if (!read_at(f, str_off, names.data(), names.size())) return path + ": truncated section names";
  for (int i = 0; i < t.count; ++i) {
    const std::uint32_t name = t.section(i, fat_off, fat_size);
    if (name < names.size() && std::strcmp(names.c_str() + name, ".nv_fatbin") == 0)
      return t.fits(*fat_off, *fat_size) ? "" : path + ": .nv_fatbin runs past the end of the file";
  }
  return path + " has no .nv_fatbin section (no CUDA kernels)";
}

// One container's entries from `begin` to `end`: which sm each holds SASS
// (kind 2) or PTX (kind 1) for, counted once per container.
void count_entries(std::ifstream& f, std::uint64_t begin, std::uint64_t end, env::FatbinArchs* out) {
  std::map<int, int> sass, ptx;
  for (std::uint64_t e = begin; e + 32 <= end;) {
    char eh[32];
    if (!read_at(f, e, eh, sizeof eh)) break;
    const auto kind = elf_get<std::uint16_t>(eh);
    const std::uint64_t header = elf_get<std::uint32_t>(eh + 4);
    const std::uint64_t payload = elf_get<std::uint32_t>(eh + 8);
    const int sm = static_cast<int>(elf_get<std::uint32_t>(eh + 28));
    if (header < 32 || sm <= 0 || sm > 10000) break;
    if (kind == 2) sass[sm] = 1;
    if (kind == 1) ptx[sm] = 1;
    e += header + payload;
  }
  for (const auto& [sm, n] : sass) out->sass[sm] += n;
  for (const auto& [sm, n] : ptx) out->ptx[sm] += n;
}

}  // namespace

env::FatbinArchs read_fatbin_archs(const std::string& path) {
  env::FatbinArchs out;
  out.file = path;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    out.error = "cannot read " + path;
    return out;
  }
  std::uint64_t pos = 0, size = 0;
  out.error = find_fatbin(f, path, &pos, &size);
  if (!out.error.empty()) return out;
  const std::uint64_t end = pos + size;
  while (pos + 16 <= end) {
    char h[16];
    if (!read_at(f, pos, h, sizeof h)) break;
    if (elf_get<std::uint32_t>(h) != kFatbinMagic) {
      pos += 8;  // containers are 8-byte aligned; skip padding
      continue;
    }
    const std::uint64_t header = elf_get<std::uint16_t>(h + 6);
    const std::uint64_t body = elf_get<std::uint64_t>(h + 8);
    if (header < 16 || body > end - pos) break;
    ++out.containers;
    count_entries(f, pos + header, pos + header + body, &out);
    pos += header + body;
  }
  if (out.containers == 0) out.error = path + ": .nv_fatbin holds no fatbin container";
  return out;
}

}  // namespace cudabench::doctor
