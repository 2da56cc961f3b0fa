// The loaders of the architectures in this folder, one file each; arch.cpp lists them by name.
#pragma once

#include "model/arch.h"

namespace hearth::model {

// llama.cpp; images (LLaVA's) only with a projector given.
Result<std::unique_ptr<Architecture>> loadLlama(const gguf::File& file, const ArchitectureOptions& options);
Result<std::unique_ptr<Architecture>> loadQwen2(const gguf::File& file);  // qwen2.cpp
Result<std::unique_ptr<Architecture>> loadQwen3(const gguf::File& file);  // qwen3.cpp
Result<std::unique_ptr<Architecture>> loadQwen3Moe(const gguf::File& file); // qwen3moe.cpp
Result<std::unique_ptr<Architecture>> loadGemma3(const gguf::File& file); // gemma3.cpp
Result<std::unique_ptr<Architecture>> loadGemma4(const gguf::File& file); // gemma4.cpp
Result<std::unique_ptr<Architecture>> loadGptOss(const gguf::File& file); // gpt_oss.cpp
Result<std::unique_ptr<Architecture>> loadPhi3(const gguf::File& file);   // phi3.cpp
Result<std::unique_ptr<Architecture>> loadMistral3(const gguf::File& file); // mistral3.cpp
Result<std::unique_ptr<Architecture>> loadSmolLm3(const gguf::File& file);  // smollm3.cpp
Result<std::unique_ptr<Architecture>> loadLfm2(const gguf::File& file);     // lfm2.cpp
Result<std::unique_ptr<Architecture>> loadQwen35(const gguf::File& file);    // qwen35.cpp
Result<std::unique_ptr<Architecture>> loadQwen35Moe(const gguf::File& file); // qwen35moe.cpp
Result<std::unique_ptr<Architecture>> loadBert(const gguf::File& file);      // bert.cpp
Result<std::unique_ptr<Architecture>> loadNomicBert(const gguf::File& file); // nomic_bert.cpp
Result<std::unique_ptr<Architecture>> loadSiglip(const gguf::File& file);    // siglip.cpp (vision)
Result<std::unique_ptr<Architecture>> loadGemma4Vision(const gguf::File& file); // gemma4_vision.cpp (vision)
Result<std::unique_ptr<Architecture>> loadQwen3VlVision(const gguf::File& file); // qwen3vl_vision.cpp (vision)
Result<std::unique_ptr<Architecture>> loadPixtral(const gguf::File& file);      // pixtral.cpp (vision)
Result<std::unique_ptr<Architecture>> loadClipMlp(const gguf::File& file);      // clip_mlp.cpp (vision)
// The hybrid decoder both qwen35 files share (qwen35.cpp), with experts or without.
Result<std::unique_ptr<Architecture>> loadQwen35Family(const gguf::File& file, bool experts);
// Its multi-token-prediction head alone (qwen35.cpp), the graph reading StepInput::HiddenIn; its
// logits over the first `shortlist` token ids when 0 < shortlist < the vocabulary (loadMtpHead).
Result<std::unique_ptr<Architecture>> loadQwen35Mtp(const gguf::File& file, bool experts, int shortlist);

} // namespace hearth::model
